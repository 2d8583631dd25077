--
-- 087: a held credit is open at the cut-off, not reconciled.
--
-- A deposit's credit held by a risk rule (079, 082) has its settlement
-- row and no MT5 deal, rightly: two people have not decided yet.
-- recon_match() listed open_at_cutoff for pending, claimed and unknown
-- credits only, so a held one hit no kind at all, and a day whose only
-- difference was money settled and held said "reconciled".  It is now
-- open_at_cutoff (medium): the run says "pending", carried to the next
-- run like any credit in flight, and the hold's own case holds the
-- decision.  A hold returned to its source is failed: settled and never
-- credited, a break (settled_not_credited) until the refund's row
-- settles it, as before.
--
-- Re-declared, this file holds its current definition:
--   recon_match()   (067's)
--

-- recon_match(), 067's with a held credit open at the cut-off (087); 044's
-- with the settlement grace.  Returns the verdict, or
-- 'unchanged:<run id>' when the inputs are those of the day's last run.
--
-- The three records meet in one pairing per movement of money:
--   settlement row  --provider key-->  credit  --reference-->  deal(s)
-- over the day's items and the ones carried; a planned withdrawal's
-- debit meets its legs' rows.  An unpaired credit inside the window is
-- in transit, an unpaired settlement row for its grace (never past the
-- window); past them, a break.  A row reported so is carried, overdue,
-- until the window ends, for a late credit to pair with.
--
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
    v_window   integer;
    v_grace    interval;
    -- references may be lowercase base32 (066); digits still match
    v_refpat   constant text := '^(dep|rfd|cbk|cbr|cor|wd):[0-9a-z]+$';
BEGIN
    PERFORM recon_prepare(p_run);
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;
    v_window := r.match_window_days;
    v_grace := make_interval(hours => r.settlement_grace_hours);

    PERFORM recon_legs(p_run);

    -- the legs' states are inputs too: a leg that failed since is a
    -- changed input
    v_digest := md5(recon_digest(p_run) || '|' || coalesce(
        (SELECT string_agg(concat_ws(':', l.credit_id, l.leg, l.status,
                                     l.provider_id),
                           ',' ORDER BY l.credit_id, l.leg)
         FROM recon_leg l), ''));
    SELECT * INTO v_prev FROM recon_run
    WHERE provider = r.provider AND business_day = r.business_day
      AND currency = r.currency AND id < p_run
      AND verdict NOT IN ('running', 'incomplete')
    ORDER BY id DESC LIMIT 1;
    IF FOUND AND v_prev.input_digest = v_digest THEN
        RETURN 'unchanged:' || v_prev.id;
    END IF;

    -- refunds the file names otherwise than the webhook did (Stripe's
    -- cumulative amount_refunded): unpaired refund rows and unpaired
    -- refund credits, carried ones included, meet by original payment and
    -- amount, oldest first, one to one
    CREATE TEMP TABLE recon_refund_pair ON COMMIT DROP AS
    WITH s AS (
        SELECT m.row_id, m.payment_id, -m.gross_minor AS amount,
               row_number() OVER (PARTITION BY m.payment_id, m.gross_minor
                                  ORDER BY m.since_day, m.created_at,
                                           m.row_id) AS rn
        FROM recon_moved m
        WHERE m.category = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_scope c
                          WHERE c.provider_payment_id = m.provider_key)
          AND NOT EXISTS (SELECT 1 FROM recon_leg_row lr
                          WHERE lr.row_id = m.row_id)
    ), c AS (
        SELECT c.provider_payment_id, c.original_key,
               c.paid_amount_minor AS amount,
               row_number() OVER (PARTITION BY c.original_key,
                                               c.paid_amount_minor
                                  ORDER BY c.since_day, c.id) AS rn
        FROM recon_scope c
        WHERE c.kind = 'refund'
          AND NOT EXISTS (SELECT 1 FROM recon_moved m
                          WHERE m.provider_key = c.provider_payment_id)
    )
    SELECT s.row_id, c.provider_payment_id AS credit_key
    FROM s JOIN c ON c.original_key = s.payment_id AND c.amount = s.amount
                 AND c.rn = s.rn;

    -- every deal with a credit's reference, weighed against that credit:
    -- how many, and whether any is on another login, of another amount
    -- or currency (each is its own finding)
    CREATE TEMP TABLE recon_ref ON COMMIT DROP AS
    SELECT c.reference, count(*) AS n,
           bool_or(d.mt5_login <> c.mt5_login
                   OR d.mt5_server <> c.mt5_server) AS wrong_login,
           bool_or(d.amount_minor <> CASE c.direction WHEN 'credit'
                                         THEN c.amount_minor
                                         ELSE -c.amount_minor END)
               AS wrong_amount,
           bool_or(d.currency <> c.currency) AS wrong_currency
    FROM recon_scope c
    JOIN recon_deal d ON d.run_id = p_run AND d.comment = c.reference
    GROUP BY c.reference;
    ANALYZE recon_ref;

    -- one row per movement: its settlement row, its credit, its deals.
    -- pair_key names it in items and cases: the credit's reference, or
    -- the settlement row when there is no credit (or, rarely, when two
    -- rows name one credit)
    CREATE TEMP TABLE recon_pair ON COMMIT DROP AS
    SELECT s.row_id, s.category, s.provider_key AS s_key, s.payment_id,
           s.gross_minor, s.currency AS s_currency, s.created_at AS s_at,
           s.since_day AS s_day, s.carried AS s_carried,
           s.first_run_id AS s_first_run, s.overdue AS s_overdue,
           c.id AS credit_id, c.kind, c.direction, c.reference, c.status,
           c.mt5_server, c.mt5_login, c.amount_minor, c.currency,
           c.paid_amount_minor, c.paid_currency, c.deposit_id,
           c.original_key, c.provider_payment_id, c.payout_status,
           c.provider_payout_id,
           c.since_day AS c_day, c.carried AS c_carried,
           c.first_run_id AS c_first_run,
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
           coalesce(d.n, 0) AS n_deals,
           coalesce(d.wrong_login, false) AS d_wrong_login,
           coalesce(d.wrong_amount, false) AS d_wrong_amount,
           coalesce(d.wrong_currency, false) AS d_wrong_currency,
           -- in transit: unpaired, its day inside the window, and a
           -- settlement row only for its grace (its credit comes first)
           -- and never again once reported
           CASE WHEN c.id IS NULL THEN
                    NOT s.overdue
                    AND r.business_day - s.since_day < v_window
                    AND s.created_at + v_grace > r.window_end
                WHEN s.row_id IS NULL THEN
                    c.kind <> 'correction'
                    AND r.business_day - c.since_day < v_window
                ELSE false END AS in_transit,
           -- overdue: a settlement row past its grace with no credit, a
           -- break (reported by the run that finds it so), carried inside
           -- the window so that a late credit still pairs with it
           c.id IS NULL AND r.business_day - s.since_day < v_window
           AND (s.overdue OR s.created_at + v_grace <= r.window_end)
               AS overdue
    FROM (SELECT m.*, coalesce(x.credit_key, m.provider_key) AS join_key
          FROM recon_moved m
          LEFT JOIN recon_refund_pair x ON x.row_id = m.row_id
          WHERE NOT EXISTS (SELECT 1 FROM recon_leg_row lr
                            WHERE lr.row_id = m.row_id)) s
    FULL JOIN (SELECT * FROM recon_scope
               WHERE id NOT IN (SELECT credit_id FROM recon_leg_planned)) c
           ON c.provider_payment_id = s.join_key
    LEFT JOIN recon_ref d ON d.reference = c.reference
    LEFT JOIN (SELECT provider_key FROM recon_moved
               GROUP BY provider_key HAVING count(*) > 1) t
           ON t.provider_key = s.join_key;

    -- a planned withdrawal's debit, one movement: settled when every leg
    -- has its row (the leg rows' checks are the leg findings below); the
    -- payout checks of 019 are the legs' own, so they are passed here
    INSERT INTO recon_pair
    SELECT CASE WHEN g.settled THEN g.row_id END,
           CASE WHEN g.settled THEN 'withdrawal' END, g.s_key, NULL,
           CASE WHEN g.settled THEN -c.paid_amount_minor END,
           CASE WHEN g.settled THEN c.paid_currency END, g.s_at, g.s_day,
           false, g.s_first_run, false,
           c.id, c.kind, c.direction, c.reference, c.status, c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, c.paid_amount_minor,
           c.paid_currency, c.deposit_id, c.original_key,
           c.provider_payment_id, 'paid', NULL,
           c.since_day, c.carried, c.first_run_id, 'withdrawal',
           c.reference,
           coalesce(d.n, 0), coalesce(d.wrong_login, false),
           coalesce(d.wrong_amount, false), coalesce(d.wrong_currency, false),
           NOT g.settled AND r.business_day - c.since_day < v_window, false
    FROM (SELECT l.credit_id, bool_and(l.row_id IS NOT NULL) AS settled,
                 min(l.row_id) AS row_id, min(l.s_key) AS s_key,
                 max(l.s_at) AS s_at, min(l.s_day) AS s_day,
                 min(l.s_first_run) AS s_first_run
          FROM recon_leg l GROUP BY l.credit_id) g
    JOIN recon_scope c ON c.id = g.credit_id
    LEFT JOIN recon_ref d ON d.reference = c.reference;
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
        -- a row whose credit failed is a break at once: MT5 refused it;
        -- a row with none, once past its grace, by the run that finds it
        -- so (an overdue row carried from an earlier run was reported)
        ('settled_not_credited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('payment', 'chargeback_reversal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit
               AND NOT p.s_overdue)
              OR p.status = 'failed')),
        ('settled_not_debited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('refund', 'chargeback', 'withdrawal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit
               AND NOT p.s_overdue)
              OR p.status = 'failed')),
        ('credited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'credit'
         AND p.kind <> 'correction' AND p.status = 'done'
         AND NOT p.in_transit),
        ('debited_not_settled', 'high',
         p.row_id IS NULL AND p.direction = 'debit'
         AND p.kind <> 'correction' AND p.status = 'done'
         AND NOT p.in_transit),
        ('credit_without_deal', 'critical',
         p.status = 'done' AND p.n_deals = 0),
        ('deal_duplicate', 'critical', p.n_deals >= 2),
        ('amount_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND abs(p.gross_minor) <> p.paid_amount_minor)
         OR p.d_wrong_amount),
        ('currency_mismatch', 'high',
         (p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
          AND p.s_currency <> p.paid_currency)
         OR p.d_wrong_currency),
        ('login_mismatch', 'critical', p.d_wrong_login),
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
        -- held (087): two people decide it; in flight until they do
        ('open_at_cutoff',
         CASE WHEN p.status = 'unknown' THEN 'high' ELSE 'medium' END,
         p.status IN ('pending', 'claimed', 'unknown', 'held'))
    ) AS k (kind, severity, hit)
    WHERE NOT coalesce(p.row_id IS NOT NULL AND p.status = 'done'
               AND p.n_deals = 1
               AND abs(p.gross_minor) = p.paid_amount_minor
               AND p.s_currency = p.paid_currency
               AND NOT p.d_wrong_amount AND NOT p.d_wrong_currency
               AND NOT p.d_wrong_login
               AND (p.kind <> 'withdrawal'
                    OR (p.payout_status IN ('accepted', 'paid')
                        AND p.payment_id = p.provider_payout_id)),
               false)
      AND k.hit;

    -- deals of the day that no credit in scope explains (one hash
    -- anti-join), then of these: no credit's at all, or a credit's that
    -- is not that credit's own deal (a second deal for a credit of
    -- another day), or its own deal, moved
    INSERT INTO recon_found
    WITH unexplained AS MATERIALIZED (
        SELECT d.mt5_server, d.deal_ticket, d.comment, d.mt5_login,
               d.amount_minor
        FROM recon_deal d
        WHERE d.run_id = p_run AND d.fetched_by = 'window'
          AND d.deal_time >= r.window_start AND d.deal_time < r.window_end
          AND NOT EXISTS (SELECT 1 FROM recon_pair p
                          WHERE p.reference = d.comment)
    )
    SELECT k.kind, 'deal:' || u.mt5_server || ':' || u.deal_ticket,
           k.severity, 'unattributed', NULL, u.mt5_server, u.deal_ticket
    FROM unexplained u
    LEFT JOIN mt5_credit c ON u.comment ~ v_refpat
                          AND c.reference = u.comment
    CROSS JOIN LATERAL (VALUES
        ('deal_without_reference', 'medium', u.comment !~ v_refpat),
        ('deal_unknown_reference', 'critical',
         u.comment ~ v_refpat AND c.id IS NULL),
        ('deal_duplicate', 'critical',
         c.id IS NOT NULL
         AND (c.mt5_deal_ticket IS DISTINCT FROM u.deal_ticket
              OR c.mt5_server <> u.mt5_server)),
        ('login_mismatch', 'critical',
         c.id IS NOT NULL AND c.mt5_deal_ticket = u.deal_ticket
         AND c.mt5_server = u.mt5_server AND c.mt5_login <> u.mt5_login),
        ('amount_mismatch', 'high',
         c.id IS NOT NULL AND c.mt5_deal_ticket = u.deal_ticket
         AND c.mt5_server = u.mt5_server
         AND u.amount_minor <> CASE c.direction WHEN 'credit'
                                   THEN c.amount_minor
                                   ELSE -c.amount_minor END)
    ) AS k (kind, severity, hit)
    WHERE k.hit;

    -- each leg against its row: the amount and currency the provider
    -- moved, and our record of the leg having gone out (a row for a leg
    -- we hold failed, or never sent; two rows for one leg; a payout paid
    -- under another id)
    -- (the payout leg's own kinds are 019's, on the withdrawal's key)
    INSERT INTO recon_found
    SELECT k.kind,
           l.reference || CASE WHEN l.kind = 'payout' THEN ''
                               ELSE '/leg' || l.leg END,
           k.severity, 'withdrawal', l.reference
    FROM recon_leg l
    CROSS JOIN LATERAL (VALUES
        ('amount_mismatch', 'high',
         l.row_id IS NOT NULL AND abs(l.gross_minor) <> l.amount_minor),
        ('currency_mismatch', 'high',
         l.row_id IS NOT NULL AND l.s_currency <> l.currency),
        ('leg_state_mismatch', 'high',
         l.row_id IS NOT NULL
         AND (l.n_rows > 1
              OR (l.kind = 'refund'
                  AND l.status IS DISTINCT FROM 'accepted'
                  AND l.status IS DISTINCT FROM 'succeeded'))),
        ('payout_state_mismatch', 'high',
         l.row_id IS NOT NULL AND l.kind = 'payout'
         AND l.status IS DISTINCT FROM 'accepted'
         AND l.status IS DISTINCT FROM 'paid'),
        ('payout_id_mismatch', 'critical',
         l.row_id IS NOT NULL AND l.kind = 'payout'
         AND l.provider_id IS NOT NULL
         AND l.s_payment_id IS DISTINCT FROM l.provider_id)
    ) AS k (kind, severity, hit)
    WHERE k.hit;

    ANALYZE recon_found;

    PERFORM recon_record_items(p_run);

    -- what stays in transit (and what is overdue), for the next run to
    -- start from
    INSERT INTO recon_transit_settlement (run_id, settlement_run_id,
        since_day, first_run_id, age_days, row_id, line_no, category,
        provider_key, payment_id, deposit_ref, currency, gross_minor,
        fee_minor, net_minor, created_at, payout_id, overdue)
    SELECT p_run, s.run_id, s.since_day, s.first_run_id,
           r.business_day - s.since_day, s.row_id, s.line_no, s.category,
           s.provider_key, s.payment_id, s.deposit_ref, s.currency,
           s.gross_minor, s.fee_minor, s.net_minor, s.created_at,
           s.payout_id, p.overdue
    FROM recon_pair p
    JOIN recon_moved s ON s.row_id = p.row_id
    WHERE (p.in_transit OR p.overdue) AND p.credit_id IS NULL
    UNION ALL
    SELECT p_run, s.run_id, s.since_day, s.first_run_id,
           r.business_day - s.since_day, s.row_id, s.line_no, s.category,
           s.provider_key, s.payment_id, s.deposit_ref, s.currency,
           s.gross_minor, s.fee_minor, s.net_minor, s.created_at,
           s.payout_id, false
    FROM recon_pair p
    JOIN recon_leg_row lr ON lr.credit_id = p.credit_id
    JOIN recon_moved s ON s.row_id = lr.row_id
    WHERE p.in_transit AND p.kind = 'withdrawal' AND p.row_id IS NULL;

    INSERT INTO recon_transit_credit
    SELECT p_run, p.credit_id, p.c_day, p.c_first_run,
           r.business_day - p.c_day, p.movement, p.reference, p.status,
           p.amount_minor, p.currency
    FROM recon_pair p
    WHERE p.in_transit AND p.row_id IS NULL;

    -- a credit of a later day, paired now: not its own day's to pair
    INSERT INTO recon_paired_ahead (run_id, credit_id, pair_key)
    SELECT p_run, p.credit_id, p.pair_key
    FROM recon_pair p
    WHERE p.row_id IS NOT NULL AND p.credit_id IS NOT NULL
      AND p.c_day > r.business_day;

    -- what an earlier run carried and this one paired
    INSERT INTO recon_matched_later (run_id, side, item_key, since_day,
                                     first_run_id, pair_key)
    SELECT p_run, 'settlement', p.row_id, p.s_day, p.s_first_run,
           p.pair_key
    FROM recon_pair p
    WHERE p.s_carried AND p.credit_id IS NOT NULL
    UNION ALL
    SELECT p_run, 'credit', p.reference, p.c_day, p.c_first_run, p.pair_key
    FROM recon_pair p
    WHERE p.c_carried AND p.row_id IS NOT NULL;

    PERFORM recon_record_counts(p_run, v_prev.id);

    -- the rows past their grace still awaited (each one's case is open)
    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'summary', 'overdue', count(*)
    FROM recon_pair WHERE overdue;

    v_verdict := CASE
        WHEN EXISTS (SELECT 1 FROM recon_found
                     WHERE kind <> 'open_at_cutoff') THEN 'breaks'
        -- in transit is no break and nothing in flight: a timing
        -- difference, carried to the next run (an overdue row was a
        -- break on the run that found it so; its case holds it)
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
