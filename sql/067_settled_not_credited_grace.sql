--
-- 067: a settlement row waits a grace of hours for its credit; a credit
-- waits the window for its row (issue 30, item 6).
--
-- 040 made the matching window symmetric: an unpaired item of either
-- side was in transit for match_window_days (7), and only then a break.
-- But the two sides do not wait for the same thing.  A credit comes
-- minutes after its payment (the webhook), its settlement row one to
-- several days later: a credit may wait days for its row.  A row has
-- nothing to wait for: its credit was due before the provider listed it.
-- So a settled payment whose webhook was lost (item 3's losses, even at
-- a provider with no events API to ask) was "in transit" for a week
-- before anybody was told a client had paid and was never credited.
-- From here:
--
--   - A settlement row with no credit (or debit) waits the run's
--     settlement grace, settlement_grace_hours (default 24, 0..168),
--     counted from its created_at to the end of the run's day.  A row
--     older than that when its day (or a later one) ends is a break:
--     settled_not_credited for a payment or a dispute reversal,
--     settled_not_debited for a refund, a chargeback or a withdrawal's
--     payout.  With 24 hours, on the run of the row's day or the next.
--     The debit side waits no longer than the credit side: a refund's
--     or a dispute's webhook is sent when it happens, and the provider
--     lists its balance transaction then too; a payout leaves only after
--     its debit is done.  (A planned withdrawal's debit is settled by its
--     legs' rows, 044: the debit is the item that waits, the window.)
--   - Credits and debits without their row keep the window, as in 040.
--   - The grace never outlasts the window: a row past the window is a
--     break whatever the grace, and a window of 0 is still the day alone.
--   - A row reported so is no longer in transit, but it is carried,
--     overdue (recon_transit_settlement.overdue), until the window ends:
--     a credit that comes late (a delivery after an outage, a replay, a
--     backfill) pairs with it and is matched later, not a
--     credited_not_settled of its own a week on.  This holds for a
--     refund paired by original payment and amount too: the carried
--     rows are in that pairing.  An overdue row is reported once, by the
--     run that found it past its grace; its case stays open for a person
--     (a late credit paired with it is in recon_matched_later and the
--     report's matched_later).  Each run counts its overdue rows
--     (summary "overdue").
--   - The grace is a run's input: recon_run.settlement_grace_hours, set
--     by the job through recon_window() with the window, is in the
--     run's digest and in its report.  Runs before 067 hold NULL: their
--     rows waited the window.  The rows the last of them left in transit
--     meet the grace on the first run after 067: those past it are
--     reported then.
--
-- Re-declared here (this file holds their current definitions):
-- recon_window() (with the grace; the two-argument one is dropped),
-- recon_prepare() (040's, carrying the overdue flag), recon_digest()
-- (040's, with the grace and the carried rows' overdue flag) and
-- recon_match() (044's, with the grace).  In recon_match(), references
-- may be lowercase base32 (066): the pattern of our reference forms is
-- now [0-9a-z]+ after the prefix (digits still match).
--

ALTER TABLE mt5credit.recon_run
    ADD COLUMN settlement_grace_hours integer
        CONSTRAINT recon_run_settlement_grace_bounded
        CHECK (settlement_grace_hours BETWEEN 0 AND 168);

-- the runs before 067 keep NULL: they used no grace
ALTER TABLE mt5credit.recon_run
    ALTER COLUMN settlement_grace_hours SET DEFAULT 24,
    ADD CONSTRAINT recon_run_settlement_grace_known
        CHECK (settlement_grace_hours IS NOT NULL OR verdict <> 'running');

COMMENT ON COLUMN mt5credit.recon_run.settlement_grace_hours IS
    'hours a settlement row waits for its credit, from its created_at to '
    'the end of the run''s day, never past match_window_days; NULL: a run '
    'before 067, whose rows waited the window (067)';

ALTER TABLE mt5credit.recon_transit_settlement
    ADD COLUMN overdue boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN mt5credit.recon_transit_settlement.overdue IS
    'past its grace with no credit: reported as a break by the run that '
    'found it so, carried inside the window only so that a late credit '
    'pairs with it; not in transit (067)';


--
-- recon_window(): the run's matching window and settlement grace, set by
-- the job right after recon_begin().  The bounds are recon_run's CHECKs.
--
DROP FUNCTION mt5credit.recon_window(bigint, integer);

CREATE FUNCTION mt5credit.recon_window(p_run bigint, p_days integer,
    p_grace_hours integer)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM recon_running(p_run);
    UPDATE recon_run
    SET match_window_days = p_days, settlement_grace_hours = p_grace_hours
    WHERE id = p_run AND verdict = 'running';
END
$$;


--
-- recon_digest(), 040's digest of the inputs, with what 067 adds: the
-- grace, and whether each carried row is overdue (reported already) or
-- still in transit.
--
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
                         r.deals_digest, r.match_window_days,
                         r.settlement_grace_hours,
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', 's', m.row_id, m.since_day,
                                m.overdue) AS x
               FROM recon_moved m WHERE m.carried
               UNION ALL
               SELECT concat_ws(':', 'c', c.id, c.since_day)
               FROM recon_scope c WHERE c.carried) h),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', c.id, c.status, c.mt5_deal_ticket,
                                c.payout_status, c.provider_payout_id) AS x
               FROM recon_scope c) h)));
END
$$;


--
-- recon_prepare(), 040's: what a run matches, gathered once in its
-- transaction:
--   recon_moved  the day's settled movements of client money, and those
--                an earlier run carried: in transit, or overdue (past
--                their grace, reported, waiting for a late credit: 067);
--   recon_scope  our credits: named by one of those rows, made since the
--                last run's day ended (normally: during the day), or
--                carried in transit.
-- Before the credits are read, a settled payment with no credit whose
-- stored event an open case holds is replayed (sql/039): the provider's
-- own signed event, through the same rules as its first delivery.
--
CREATE OR REPLACE FUNCTION mt5credit.recon_prepare(p_run bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
SET jit = off
AS $$
DECLARE
    r       recon_run;
    v_src   recon_run;
    v_from  timestamptz;
    v       record;
BEGIN
    IF to_regclass('pg_temp.recon_prepared') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.recon_prepared
                   WHERE run_id = p_run)
        THEN
            RETURN;
        END IF;
        RAISE EXCEPTION 'another run was prepared in this transaction'
            USING ERRCODE = 'MC031';
    END IF;

    r := recon_running(p_run);

    -- the items in transit: the last finished run of an earlier day
    SELECT * INTO v_src FROM recon_run o
    WHERE o.provider = r.provider AND o.currency = r.currency
      AND o.business_day BETWEEN r.business_day - r.match_window_days - 1
                             AND r.business_day - 1
      AND o.verdict NOT IN ('running', 'incomplete')
    ORDER BY o.business_day DESC, o.id DESC
    LIMIT 1;

    UPDATE recon_run SET carried_from_run_id = v_src.id
    WHERE id = p_run AND verdict = 'running';

    -- credits made on days no run looked at are this run's too
    v_from := r.window_start;
    IF v_src.id IS NOT NULL AND v_src.window_end < v_from THEN
        v_from := greatest(v_src.window_end,
                           r.window_start
                           - make_interval(days => r.match_window_days));
    END IF;

    CREATE TEMP TABLE recon_prepared ON COMMIT DROP AS
    SELECT p_run AS run_id, v_src.id AS source_run_id;

    CREATE TEMP TABLE recon_moved ON COMMIT DROP AS
    SELECT s.*, r.business_day AS since_day, p_run AS first_run_id,
           false AS carried, false AS overdue
    FROM recon_settlement s
    WHERE s.run_id = p_run
      AND s.category IN ('payment', 'refund', 'chargeback',
                         'chargeback_reversal', 'withdrawal');

    INSERT INTO recon_moved
    SELECT t.settlement_run_id, t.row_id, t.line_no, t.category,
           t.provider_key, t.payment_id, t.deposit_ref, t.currency,
           t.gross_minor, t.fee_minor, t.net_minor, t.created_at,
           t.payout_id, t.since_day, t.first_run_id, true, t.overdue
    FROM recon_transit_settlement t
    WHERE t.run_id = v_src.id
      -- a row the day's own file lists again is the day's
      AND NOT EXISTS (SELECT 1 FROM recon_settlement s
                      WHERE s.run_id = p_run AND s.row_id = t.row_id);
    ANALYZE recon_moved;

    -- the one automatic fix: replay what the provider already signed
    FOR v IN
        SELECT DISTINCT ON (m.row_id) m.row_id, m.provider_key,
               k.webhook_event_id
        FROM mt5credit.case k
        JOIN webhook_event e ON e.id = k.webhook_event_id
                            AND e.provider = r.provider
        JOIN recon_moved m ON m.provider_key
                              = k.details->'facts'->>'payment_key'
        WHERE k.status <> 'resolved'
          AND k.details->'facts'->>'payment_key' IS NOT NULL
          AND m.category = 'payment'
          AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                          WHERE c.provider = r.provider
                            AND c.provider_payment_id = m.provider_key)
        ORDER BY m.row_id, k.webhook_event_id
    LOOP
        PERFORM event_replay_as(v.webhook_event_id,
            'reconciliation run ' || p_run || ': ' || r.provider
                || ' settled ' || v.provider_key || ' (row ' || v.row_id
                || ') and no credit has it',
            p_run);
    END LOOP;

    CREATE TEMP TABLE recon_scope ON COMMIT DROP AS
    WITH ids AS (
        SELECT c.id FROM mt5_credit c
        WHERE c.provider = r.provider
          AND c.provider_payment_id IN (SELECT provider_key FROM recon_moved)
        UNION
        SELECT c.id FROM mt5_credit c
        WHERE c.provider = r.provider AND c.paid_currency = r.currency
          AND c.created_at >= v_from AND c.created_at < r.window_end
          -- paired by the run of an earlier day, made after it
          AND NOT EXISTS (SELECT 1 FROM recon_paired_ahead a
                          JOIN recon_run o ON o.id = a.run_id
                          WHERE a.credit_id = c.id
                            AND o.business_day < r.business_day
                            AND o.provider = r.provider
                            AND o.verdict NOT IN ('running', 'incomplete'))
        UNION
        SELECT t.credit_id FROM recon_transit_credit t
        WHERE t.run_id = v_src.id
    )
    SELECT c.*,
           CASE WHEN c.original_credit_id IS NOT NULL THEN
               (SELECT o.provider_payment_id FROM mt5_credit o
                WHERE o.id = c.original_credit_id) END AS original_key,
           po.status AS payout_status, po.provider_payout_id,
           po.reference AS payout_reference,
           coalesce(t.since_day,
                    (c.created_at AT TIME ZONE r.time_zone)::date)
               AS since_day,
           coalesce(t.first_run_id, p_run) AS first_run_id,
           t.credit_id IS NOT NULL AS carried
    FROM ids
    JOIN mt5_credit c ON c.id = ids.id
    LEFT JOIN payout po ON po.debit_credit_id = c.id
    LEFT JOIN recon_transit_credit t
           ON t.run_id = v_src.id AND t.credit_id = c.id;
    ANALYZE recon_scope;
END
$$;


--
-- recon_match(), 044's with the settlement grace.  Returns the verdict, or
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
        ('open_at_cutoff',
         CASE WHEN p.status = 'unknown' THEN 'high' ELSE 'medium' END,
         p.status IN ('pending', 'claimed', 'unknown'))
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


REVOKE ALL ON FUNCTION mt5credit.recon_window(bigint, integer, integer)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION mt5credit.recon_window(bigint, integer, integer)
    TO mt5credit_recon;
