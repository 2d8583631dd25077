--
-- 019: payouts in the daily reconciliation.
--
-- The three records of a withdrawal: the provider's settlement row of the
-- payout (generic format, type "withdrawal": our wd_ reference and the
-- provider's payout id), our withdrawal with its debit and payout record
-- (017, 018), and the MT5 debit deal "wd:<id>".  Matched both ways, like
-- payments:
--
--   settled_not_debited    the provider paid out a withdrawal we have no
--                          done debit for: money left the company
--   debited_not_settled    a done debit, no payout in the file (a payout
--                          rejected after the debit shows here, beside
--                          its payout_rejected case)
--   payout_state_mismatch  the provider paid out what our payout record
--                          calls unknown, pending or rejected
--   payout_id_mismatch     the provider's payout id in the file is not the
--                          one it gave us for this withdrawal
--   and the deal checks (amount, currency, login, duplicates) as for any
--   credit.
--
-- recon_match() is re-declared here with these rules (migrations are
-- immutable once applied; CREATE OR REPLACE is how a function changes).
-- What changed from 011: the "wd" reference, the "withdrawal" movement,
-- the payout record in scope and in the items, the two payout kinds.
--

ALTER TABLE mt5credit.recon_settlement
    DROP CONSTRAINT recon_settlement_category_check,
    ADD CONSTRAINT recon_settlement_category_check
        CHECK (category IN ('payment', 'refund', 'chargeback',
                            'chargeback_reversal', 'fee', 'payout', 'other',
                            'withdrawal'));

ALTER TABLE mt5credit.recon_item
    DROP CONSTRAINT recon_item_kind_check,
    ADD CONSTRAINT recon_item_kind_check
        CHECK (kind IN ('settled_not_credited', 'settled_not_debited',
                        'credited_not_settled', 'debited_not_settled',
                        'credit_without_deal', 'deal_unknown_reference',
                        'deal_duplicate', 'deal_without_reference',
                        'amount_mismatch', 'currency_mismatch',
                        'login_mismatch', 'open_at_cutoff',
                        'payout_state_mismatch', 'payout_id_mismatch')),
    DROP CONSTRAINT recon_item_movement_check,
    ADD CONSTRAINT recon_item_movement_check
        CHECK (movement IN ('payment', 'refund', 'chargeback',
                            'chargeback_reversal', 'correction',
                            'withdrawal', 'unattributed'));


-- 011's digest of the inputs, with the payout records in scope: a payout
-- that changed since the last run is a changed input
CREATE OR REPLACE FUNCTION mt5credit.recon_digest(p_run bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  recon_run;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run;
    RETURN md5(concat_ws('|', r.settlement_sha256, r.control_sha256,
                         r.deals_digest,
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', c.id, c.status, c.mt5_deal_ticket,
                                c.payout_status, c.provider_payout_id) AS x
               FROM recon_scope c) h)));
END
$$;


CREATE OR REPLACE FUNCTION mt5credit.recon_match(p_run bigint)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
-- a plan compiled per run costs more than it saves on set operations
SET jit = off
AS $$
DECLARE
    r          recon_run;
    v_prev     recon_run;
    v_digest   text;
    v_verdict  text;
    v_item     record;
    v_case     bigint;
    v_refpat   constant text := '^(dep|rfd|cbk|cbr|cor|wd):[0-9]+$';
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;

    -- the settled movements of client money
    CREATE TEMP TABLE recon_moved ON COMMIT DROP AS
    SELECT * FROM recon_settlement
    WHERE run_id = p_run
      AND category IN ('payment', 'refund', 'chargeback',
                       'chargeback_reversal', 'withdrawal');
    ANALYZE recon_moved;

    -- our credits in scope: named by a settled row, or made for this
    -- provider and currency during the day
    CREATE TEMP TABLE recon_scope ON COMMIT DROP AS
    SELECT c.*,
           CASE WHEN c.original_credit_id IS NOT NULL THEN
               (SELECT o.provider_payment_id FROM mt5_credit o
                WHERE o.id = c.original_credit_id) END AS original_key,
           po.status AS payout_status, po.provider_payout_id,
           po.reference AS payout_reference
    FROM mt5_credit c
    LEFT JOIN payout po ON po.debit_credit_id = c.id
    WHERE c.provider = r.provider
      AND (c.provider_payment_id IN (SELECT provider_key FROM recon_moved)
           OR (c.paid_currency = r.currency
               AND c.created_at >= r.window_start
               AND c.created_at < r.window_end));
    ANALYZE recon_scope;

    v_digest := recon_digest(p_run);
    SELECT * INTO v_prev FROM recon_run
    WHERE provider = r.provider AND business_day = r.business_day
      AND currency = r.currency AND id < p_run
      AND verdict NOT IN ('running', 'incomplete')
    ORDER BY id DESC LIMIT 1;
    IF FOUND AND v_prev.input_digest = v_digest THEN
        RETURN 'unchanged:' || v_prev.id;
    END IF;

    -- deals per comment; those that are a credit's reference pair below
    CREATE TEMP TABLE recon_ref ON COMMIT DROP AS
    SELECT comment AS reference, count(*) AS n,
           min(mt5_server) AS server, min(mt5_login) AS login,
           min(amount_minor) AS amount, min(currency) AS currency
    FROM recon_deal
    WHERE run_id = p_run
    GROUP BY comment;
    ANALYZE recon_ref;

    -- refunds the file names otherwise than the webhook did (Stripe's
    -- cumulative amount_refunded): unpaired refund rows and unpaired
    -- refund credits meet by original payment and amount, one to one
    CREATE TEMP TABLE recon_refund_pair ON COMMIT DROP AS
    WITH s AS (
        SELECT m.row_id, m.payment_id, -m.gross_minor AS amount,
               row_number() OVER (PARTITION BY m.payment_id, m.gross_minor
                                  ORDER BY m.created_at, m.row_id) AS rn
        FROM recon_moved m
        WHERE m.category = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_scope c
                          WHERE c.provider_payment_id = m.provider_key)
    ), c AS (
        SELECT c.provider_payment_id, c.original_key,
               c.paid_amount_minor AS amount,
               row_number() OVER (PARTITION BY c.original_key,
                                               c.paid_amount_minor
                                  ORDER BY c.id) AS rn
        FROM recon_scope c
        WHERE c.kind = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_moved m
                          WHERE m.provider_key = c.provider_payment_id)
    )
    SELECT s.row_id, c.provider_payment_id AS credit_key
    FROM s JOIN c ON c.original_key = s.payment_id AND c.amount = s.amount
                 AND c.rn = s.rn;

    -- one row per movement: its settlement row, its credit, its deals.
    -- pair_key names it in items and cases: the credit's reference, or
    -- the settlement row when there is no credit (or, rarely, when two
    -- rows name one credit)
    CREATE TEMP TABLE recon_pair ON COMMIT DROP AS
    SELECT s.row_id, s.category, s.provider_key AS s_key, s.payment_id,
           s.gross_minor, s.currency AS s_currency, s.created_at AS s_at,
           c.id AS credit_id, c.kind, c.direction, c.reference, c.status,
           c.mt5_server, c.mt5_login, c.amount_minor, c.currency,
           c.paid_amount_minor, c.paid_currency, c.deposit_id,
           c.original_key, c.provider_payment_id, c.payout_status,
           c.provider_payout_id,
           coalesce(s.category,
                    CASE WHEN c.kind = 'deposit' THEN 'payment'
                         WHEN c.kind = 'refund' THEN 'refund'
                         WHEN c.kind = 'correction' THEN 'correction'
                         WHEN c.kind = 'withdrawal' THEN 'withdrawal'
                         WHEN c.direction = 'debit' THEN 'chargeback'
                         ELSE 'chargeback_reversal' END) AS movement,
           CASE WHEN c.reference IS NULL THEN 'settlement:' || s.row_id
                WHEN t.provider_key IS NOT NULL
                THEN c.reference || '/' || s.row_id
                ELSE c.reference END AS pair_key,
           coalesce(d.n, 0) AS n_deals, d.server AS d_server,
           d.login AS d_login, d.amount AS d_amount,
           d.currency AS d_currency
    FROM (SELECT m.*, coalesce(x.credit_key, m.provider_key) AS join_key
          FROM recon_moved m
          LEFT JOIN recon_refund_pair x ON x.row_id = m.row_id) s
    FULL JOIN recon_scope c ON c.provider_payment_id = s.join_key
    LEFT JOIN recon_ref d ON d.reference = c.reference
    LEFT JOIN (SELECT provider_key FROM recon_moved
               GROUP BY provider_key HAVING count(*) > 1) t
           ON t.provider_key = s.join_key;
    ANALYZE recon_pair;

    -- the findings: (kind, key, severity, movement, pair) per difference;
    -- a movement where all three agree is passed over in one test
    CREATE TEMP TABLE recon_found (
        kind         text NOT NULL,
        item_key     text NOT NULL,
        severity     text NOT NULL,
        movement     text NOT NULL,
        pair_key     text,
        deal_server  text,
        deal_ticket  bigint
    ) ON COMMIT DROP;

    INSERT INTO recon_found
    SELECT k.kind, p.pair_key, k.severity, p.movement, p.pair_key
    FROM recon_pair p
    CROSS JOIN LATERAL (VALUES
        ('settled_not_credited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('payment', 'chargeback_reversal')
         AND (p.credit_id IS NULL OR p.status = 'failed')),
        ('settled_not_debited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('refund', 'chargeback', 'withdrawal')
         AND (p.credit_id IS NULL OR p.status = 'failed')),
        ('credited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'credit'
         AND p.kind <> 'correction' AND p.status = 'done'),
        ('debited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'debit'
         AND p.kind <> 'correction' AND p.status = 'done'),
        ('credit_without_deal', 'critical',
         p.status = 'done' AND p.n_deals = 0),
        ('deal_duplicate', 'critical', p.n_deals >= 2),
        ('amount_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND abs(p.gross_minor) <> p.paid_amount_minor)
         OR (p.n_deals = 1
             AND p.d_amount <> CASE p.direction WHEN 'credit'
                                    THEN p.amount_minor
                                    ELSE -p.amount_minor END)),
        ('currency_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND p.s_currency <> p.paid_currency)
         OR (p.n_deals = 1 AND p.d_currency <> p.currency)),
        ('login_mismatch', 'critical',
         p.n_deals = 1 AND (p.d_login <> p.mt5_login
                            OR p.d_server <> p.mt5_server)),
        -- a payout: the provider's record of it and ours must agree too
        ('payout_state_mismatch', 'high',
         p.row_id IS NOT NULL AND p.kind = 'withdrawal'
         AND p.status = 'done'
         AND p.payout_status IS DISTINCT FROM 'paid'
         AND p.payout_status IS DISTINCT FROM 'accepted'),
        ('payout_id_mismatch', 'critical',
         p.row_id IS NOT NULL AND p.kind = 'withdrawal'
         AND p.provider_payout_id IS NOT NULL
         AND p.payment_id IS DISTINCT FROM p.provider_payout_id),
        ('open_at_cutoff',
         CASE WHEN p.status = 'unknown' THEN 'high' ELSE 'medium' END,
         p.status IN ('pending', 'claimed', 'unknown'))
    ) AS k (kind, severity, hit)
    WHERE NOT coalesce(p.row_id IS NOT NULL AND p.status = 'done'
               AND p.n_deals = 1
               AND abs(p.gross_minor) = p.paid_amount_minor
               AND p.s_currency = p.paid_currency
               AND p.d_amount = CASE p.direction WHEN 'credit'
                                     THEN p.amount_minor
                                     ELSE -p.amount_minor END
               AND p.d_currency = p.currency
               AND p.d_login = p.mt5_login AND p.d_server = p.mt5_server
               AND (p.kind <> 'withdrawal'
                    OR (p.payout_status IN ('accepted', 'paid')
                        AND p.payment_id = p.provider_payout_id)),
               false)
      AND k.hit;

    -- a settled-elsewhere credit is not "not settled": the file of an
    -- earlier day (a payment at 23:59 credited at 00:01) may hold its row
    DELETE FROM recon_found f
    USING recon_pair p
    WHERE f.kind IN ('credited_not_settled', 'debited_not_settled')
      AND p.pair_key = f.pair_key
      AND p.provider_payment_id IN (
          SELECT s.provider_key
          FROM recon_settlement s
          WHERE s.run_id IN (SELECT o.id FROM recon_run o
                             WHERE o.provider = r.provider
                               AND o.business_day
                                   BETWEEN r.business_day - 3
                                       AND r.business_day - 1
                               AND o.verdict NOT IN ('running',
                                                     'incomplete')));

    -- deals of the day that no credit explains: first those no credit in
    -- scope explains (one hash anti-join), then of these the ones that are
    -- no credit's at all (one index probe each, for a few)
    INSERT INTO recon_found
    WITH unexplained AS MATERIALIZED (
        SELECT d.mt5_server, d.deal_ticket, d.comment
        FROM recon_deal d
        WHERE d.run_id = p_run
          AND d.deal_time >= r.window_start AND d.deal_time < r.window_end
          AND NOT EXISTS (SELECT 1 FROM recon_pair p
                          WHERE p.reference = d.comment)
    )
    SELECT CASE WHEN u.comment ~ v_refpat THEN 'deal_unknown_reference'
                ELSE 'deal_without_reference' END,
           'deal:' || u.mt5_server || ':' || u.deal_ticket,
           CASE WHEN u.comment ~ v_refpat THEN 'critical' ELSE 'medium' END,
           'unattributed', NULL, u.mt5_server, u.deal_ticket
    FROM unexplained u
    WHERE u.comment !~ v_refpat
       OR NOT EXISTS (SELECT 1 FROM mt5_credit c
                      WHERE c.reference = u.comment);

    ANALYZE recon_found;

    -- the deals the findings are about, gathered in one pass each: by
    -- reference for a movement, by ticket for a deal nobody explains
    CREATE TEMP TABLE recon_found_deals ON COMMIT DROP AS
    SELECT x.kind, x.item_key,
           jsonb_agg(to_jsonb(d) - 'run_id'
                     ORDER BY d.mt5_server, d.deal_ticket) AS deals
    FROM (SELECT f.kind, f.item_key, p.reference
          FROM recon_found f JOIN recon_pair p ON p.pair_key = f.pair_key
          WHERE p.reference IS NOT NULL) x
    JOIN recon_deal d
      ON d.run_id = p_run
     AND d.comment = x.reference
    GROUP BY x.kind, x.item_key
    UNION ALL
    SELECT f.kind, f.item_key,
           jsonb_agg(to_jsonb(d) - 'run_id') AS deals
    FROM recon_found f
    JOIN recon_deal d
      ON d.run_id = p_run AND d.mt5_server = f.deal_server
     AND d.deal_ticket = f.deal_ticket
    WHERE f.deal_ticket IS NOT NULL
    GROUP BY f.kind, f.item_key;

    -- items and cases, the three records side by side
    FOR v_item IN
        SELECT f.*,
               p.credit_id, p.deposit_id,
               coalesce(p.paid_amount_minor, abs(p.gross_minor),
                        abs((fd.deals->0->>'amount_minor')::bigint))
                   AS amount_minor,
               coalesce(p.paid_currency, p.s_currency,
                        fd.deals->0->>'currency') AS currency,
               to_jsonb(s) - 'run_id' AS settlement,
               CASE WHEN c.id IS NOT NULL THEN jsonb_build_object(
                    'id', c.id, 'reference', c.reference, 'kind', c.kind,
                    'direction', c.direction, 'status', c.status,
                    'provider', c.provider,
                    'provider_payment_id', c.provider_payment_id,
                    'mt5_server', c.mt5_server, 'mt5_login', c.mt5_login,
                    'amount_minor', c.amount_minor, 'currency', c.currency,
                    'paid_amount_minor', c.paid_amount_minor,
                    'paid_currency', c.paid_currency,
                    'mt5_deal_ticket', c.mt5_deal_ticket,
                    'created_at', c.created_at)
                    || CASE WHEN c.kind = 'withdrawal' THEN
                       jsonb_build_object('withdrawal_id', c.withdrawal_id,
                           'payout', c.payout_reference,
                           'payout_status', c.payout_status,
                           'provider_payout_id', c.provider_payout_id)
                       ELSE '{}' END END AS credit,
               coalesce(fd.deals, '[]') AS deals
        FROM recon_found f
        LEFT JOIN recon_pair p ON p.pair_key = f.pair_key
        LEFT JOIN recon_moved s ON s.row_id = p.row_id
        LEFT JOIN recon_scope c ON c.id = p.credit_id
        LEFT JOIN recon_found_deals fd
               ON fd.kind = f.kind AND fd.item_key = f.item_key
        ORDER BY f.kind, f.item_key
    LOOP
        v_case := open_case(v_item.kind, v_item.severity,
            'recon:' || v_item.kind || ':' || r.provider || ':'
                || v_item.item_key,
            jsonb_build_object('run', p_run,
                               'business_day', r.business_day,
                               'settlement', v_item.settlement,
                               'credit', v_item.credit,
                               'deals', v_item.deals),
            v_item.credit_id, v_item.deposit_id, NULL,
            v_item.amount_minor, v_item.currency);

        INSERT INTO recon_item (run_id, kind, item_key, severity, movement,
                                amount_minor, currency, settlement, credit,
                                deals, case_id)
        VALUES (p_run, v_item.kind, v_item.item_key, v_item.severity,
                v_item.movement, v_item.amount_minor, v_item.currency,
                v_item.settlement, v_item.credit, v_item.deals, v_case);
    END LOOP;

    -- the day at a glance: each movement is matched (all three agree),
    -- mismatched (a finding other than being in flight), or neither
    CREATE TEMP TABLE recon_state ON COMMIT DROP AS
    SELECT p.movement,
           CASE WHEN f.broken THEN 'mismatched'
                WHEN f.pair_key IS NULL AND p.row_id IS NOT NULL
                     AND p.status = 'done' AND p.n_deals = 1
                THEN 'matched' END AS state,
           p.status
    FROM recon_pair p
    LEFT JOIN (SELECT pair_key, bool_or(kind <> 'open_at_cutoff') AS broken
               FROM recon_found WHERE pair_key IS NOT NULL
               GROUP BY pair_key) f ON f.pair_key = p.pair_key;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'summary', m.name, m.n
    FROM (SELECT count(*) FILTER (WHERE state = 'matched') AS matched,
                 count(*) FILTER (WHERE status IN ('pending', 'claimed'))
                     AS pending,
                 count(*) FILTER (WHERE status = 'unknown') AS unknown
          FROM recon_state) x
    CROSS JOIN LATERAL (VALUES
        ('should_process', (SELECT count(*) FROM recon_moved)),
        ('matched', x.matched),
        ('pending', x.pending),
        ('still_unknown', x.unknown),
        ('mismatched',
         (SELECT count(DISTINCT item_key) FROM recon_found
          WHERE kind <> 'open_at_cutoff')),
        ('fixed_since_last_run',
         (SELECT count(*) FROM recon_item i
          WHERE v_prev.id IS NOT NULL AND i.run_id = v_prev.id
            AND NOT EXISTS (SELECT 1 FROM recon_found f
                            WHERE f.kind = i.kind
                              AND f.item_key = i.item_key))),
        ('deals', (SELECT count(*) FROM recon_deal WHERE run_id = p_run)),
        ('settlement_rows',
         (SELECT count(*) FROM recon_settlement WHERE run_id = p_run))
    ) AS m (name, n);

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'kind', kind, count(*) FROM recon_found GROUP BY kind;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, state, movement, count(*)
    FROM recon_state WHERE state IS NOT NULL
    GROUP BY state, movement;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'mismatched', 'unattributed', count(*)
    FROM recon_found WHERE movement = 'unattributed'
    HAVING count(*) > 0;

    v_verdict := CASE
        WHEN EXISTS (SELECT 1 FROM recon_found
                     WHERE kind <> 'open_at_cutoff') THEN 'breaks'
        WHEN EXISTS (SELECT 1 FROM recon_found) THEN 'pending'
        ELSE 'reconciled' END;

    UPDATE recon_run
    SET verdict = v_verdict, input_digest = v_digest, finished_at = now(),
        previous_run_id = v_prev.id
    WHERE id = p_run AND verdict = 'running';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'run % was finished by someone else', p_run
            USING ERRCODE = 'MC031';
    END IF;

    RETURN v_verdict;
END
$$;
