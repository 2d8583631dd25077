--
-- 040: reconciliation across days.
--
-- Money and its settlement rarely land on the same day: Stripe settles a
-- card payment one to several days later, a refund's webhook and its
-- balance transaction straddle midnight, a webhook outage moves credits
-- past it.  Until now each day was matched alone, and every one of these
-- was a break for a person.  From here:
--
--   - A settlement row and its credit (or debit) may fall on different
--     days within the run's matching window (match_window_days, default
--     7, each way).  Inside it an unpaired item is in transit, with its
--     age: no finding, no case.  Each run writes what is in transit
--     (recon_transit_settlement, recon_transit_credit), and the next run
--     starts from it (carried_from_run_id: the last finished run of an
--     earlier day, at most the window away).  The day its partner comes,
--     both are matched, and recon_matched_later says which run matched
--     the item an earlier run carried.
--   - Only past the window does an unpaired item become a break: on the
--     first run match_window_days or more after its day (its partner may
--     still come that day: pairing comes first).  A window of 0 is the
--     day alone.
--   - A run made after a credit of a later day existed pairs it ahead
--     (recon_paired_ahead); that credit's own day does not count it again.
--   - Pairing by original payment and amount (a refund the file names
--     otherwise than the webhook did) sees the carried items too: oldest
--     first, each row used once.
--   - A credit's deal is found wherever it lies in time: a done credit
--     whose deal is not in the run's own fetch is asked for by ticket
--     (recon_tickets(), deal/get_batch; those deals are fetched_by
--     'ticket').
--   - Every finding is reported: a second deal and a wrong login on one
--     reference are two findings; a deal of a credit outside the run's
--     scope that is not that credit's own deal is a duplicate.
--   - A settled payment with no credit whose stored, verified event a
--     case still holds open is replayed (sql/039): the one automatic fix.
--
-- Re-declared here (their current definitions): recon_load_deals() (the
-- ticket deals, a digest per load; and the untagging of 036 and the
-- zoned deal time of 038, whose row triggers are dropped), recon_digest()
-- (the carried items and the window are inputs) and recon_match(), whose
-- writing of items, cases and counts is now recon_record_items() and
-- recon_record_counts(), so the next change of rules need not repeat it.
--

ALTER TABLE mt5credit.recon_run
    ADD COLUMN match_window_days integer NOT NULL DEFAULT 7
        CHECK (match_window_days BETWEEN 0 AND 62),
    ADD COLUMN carried_from_run_id bigint
        REFERENCES mt5credit.recon_run (id);

COMMENT ON COLUMN mt5credit.recon_run.carried_from_run_id IS
    'the run whose in-transit items this run started from (040)';

ALTER TABLE mt5credit.recon_deal
    ADD COLUMN fetched_by text NOT NULL DEFAULT 'window'
        CHECK (fetched_by IN ('window', 'ticket'));

COMMENT ON COLUMN mt5credit.recon_deal.fetched_by IS
    'window: in the run''s fetch of every deal of the day; ticket: asked '
    'for by a credit''s ticket, wherever it lies in time (040)';

ALTER TABLE mt5credit.recon_deal_in
    ADD COLUMN by_ticket boolean NOT NULL DEFAULT false;


-- Settlement rows in transit after a run: the row itself (so the next run
-- needs no earlier day's file), the run whose file had it, since when.
-- Bulk and append-only like recon_settlement (no per-row foreign key).
CREATE TABLE mt5credit.recon_transit_settlement (
    run_id             bigint      NOT NULL,   -- the run that carries it
    settlement_run_id  bigint      NOT NULL,   -- the run whose file had it
    since_day          date        NOT NULL,
    first_run_id       bigint      NOT NULL,
    age_days           integer     NOT NULL CHECK (age_days >= 0),
    row_id             text        NOT NULL,
    line_no            bigint      NOT NULL,
    category           text        NOT NULL,
    provider_key       text        NOT NULL,
    payment_id         text,
    deposit_ref        text,
    currency           text        NOT NULL,
    gross_minor        bigint      NOT NULL,
    fee_minor          bigint      NOT NULL,
    net_minor          bigint      NOT NULL,
    created_at         timestamptz NOT NULL,
    payout_id          text
);

CREATE INDEX recon_transit_settlement_run_brin
    ON mt5credit.recon_transit_settlement USING brin (run_id);

-- Credits (and debits) in transit after a run: done or still in flight,
-- with no settlement row yet.
CREATE TABLE mt5credit.recon_transit_credit (
    run_id        bigint   NOT NULL,
    credit_id     bigint   NOT NULL,
    since_day     date     NOT NULL,
    first_run_id  bigint   NOT NULL,
    age_days      integer  NOT NULL CHECK (age_days >= 0),
    movement      text     NOT NULL,
    reference     text     NOT NULL,
    status        text     NOT NULL,
    amount_minor  bigint   NOT NULL,
    currency      text     NOT NULL
);

CREATE INDEX recon_transit_credit_run_brin
    ON mt5credit.recon_transit_credit USING brin (run_id);

-- An item an earlier run carried, paired by this run.
CREATE TABLE mt5credit.recon_matched_later (
    run_id        bigint   NOT NULL REFERENCES mt5credit.recon_run (id),
    side          text     NOT NULL CHECK (side IN ('settlement', 'credit')),
    item_key      text     NOT NULL,    -- the row id, or the reference
    since_day     date     NOT NULL,
    first_run_id  bigint   NOT NULL REFERENCES mt5credit.recon_run (id),
    pair_key      text     NOT NULL,
    PRIMARY KEY (run_id, side, item_key)
);

-- A credit of a later day than the run's, paired by it (a run made late,
-- after the credit: a payment settled before the webhook came).  Its own
-- day's run must not take it for unsettled.
CREATE TABLE mt5credit.recon_paired_ahead (
    run_id     bigint  NOT NULL REFERENCES mt5credit.recon_run (id),
    credit_id  bigint  NOT NULL REFERENCES mt5credit.mt5_credit (id),
    pair_key   text    NOT NULL,
    PRIMARY KEY (run_id, credit_id)
);

CREATE INDEX recon_paired_ahead_credit_idx
    ON mt5credit.recon_paired_ahead (credit_id);

CREATE TRIGGER recon_paired_ahead_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_paired_ahead
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER recon_transit_settlement_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_transit_settlement
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER recon_transit_credit_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_transit_credit
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER recon_matched_later_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_matched_later
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

ALTER TABLE mt5credit.webhook_event_replay
    ADD FOREIGN KEY (recon_run_id) REFERENCES mt5credit.recon_run (id);


-- the run's matching window, set by the job right after recon_begin()
CREATE FUNCTION mt5credit.recon_window(p_run bigint, p_days integer)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM recon_running(p_run);
    UPDATE recon_run SET match_window_days = p_days
    WHERE id = p_run AND verdict = 'running';
END
$$;


-- 036's untagging and 038's zoned time, a row trigger each, are done by
-- recon_load_deals() below for the whole set
DROP TRIGGER recon_deal_untag ON mt5credit.recon_deal;
DROP TRIGGER recon_deal_in_zoned ON mt5credit.recon_deal_in;

--
-- 011's recon_load_deals(), loading twice: the window's deals, then those
-- asked for by ticket.  Each load brings its own digest; the run's is
-- the digest of the two.
--
CREATE OR REPLACE FUNCTION mt5credit.recon_load_deals(p_run bigint,
    p_deals_digest text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
SET jit = off
AS $$
DECLARE
    r       recon_run;
    v_bad   record;
    v_why   text;
    v_twice boolean;
    v_tag   text := (SELECT tag FROM deployment);
BEGIN
    r := recon_running(p_run);

    UPDATE recon_run
    SET deals_digest = CASE WHEN deals_digest IS NULL THEN p_deals_digest
                            ELSE md5(deals_digest || p_deals_digest) END
    WHERE id = p_run;

    -- the same deal twice (overlapping pages) is one deal; the same ticket
    -- with other content is a source that contradicts itself
    SELECT mt5_server, deal_ticket,
           count(DISTINCT (mt5_login, amount_minor, currency, comment,
                           deal_epoch)) > 1 AS differs
    INTO v_bad
    FROM recon_deal_in
    WHERE run_id = p_run
    GROUP BY mt5_server, deal_ticket
    HAVING count(*) > 1
    ORDER BY 3 DESC LIMIT 1;
    v_twice := FOUND;
    IF v_twice AND v_bad.differs THEN
        v_why := 'MT5 server ' || v_bad.mt5_server || ' returned deal '
                 || v_bad.deal_ticket || ' twice with different content';
    END IF;

    SELECT mt5_server, currency INTO v_bad FROM recon_deal_in i
    WHERE run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM currency c WHERE c.code = i.currency)
    LIMIT 1;
    IF FOUND AND v_why IS NULL THEN
        v_why := 'MT5 server ' || v_bad.mt5_server || ': a group in '
                 || 'currency "' || v_bad.currency || '", unknown here';
    END IF;

    -- a ticket is asked for only when the window's fetch lacks it
    -- (recon_tickets()), and the job checks every answer was asked for.
    -- The comment without this deployment's tag, and a zoned server's
    -- deal time, are worked out here for the whole set: 036's and 038's
    -- row triggers did the same a row at a time, most of a load's cost
    WITH staged AS (
        -- the same deal twice (overlapping pages) is kept once; without
        -- duplicates, no sort of a million rows
        SELECT * FROM (SELECT DISTINCT ON (mt5_server, deal_ticket) *
                       FROM recon_deal_in
                       WHERE run_id = p_run AND v_twice
                       ORDER BY mt5_server, deal_ticket) d
        UNION ALL
        SELECT * FROM recon_deal_in WHERE run_id = p_run AND NOT v_twice
    )
    INSERT INTO recon_deal (run_id, mt5_server, deal_ticket, mt5_login,
                            amount_minor, currency, comment, mt5_comment,
                            deal_time, fetched_by)
    SELECT i.run_id, i.mt5_server, i.deal_ticket, i.mt5_login,
           i.amount_minor, i.currency,
           CASE WHEN v_tag IS NOT NULL
                     AND left(i.comment, length(v_tag) + 1) = v_tag || ':'
                THEN substr(i.comment, length(v_tag) + 2)
                ELSE i.comment END,
           i.comment,
           CASE WHEN i.time_zone IS NULL THEN to_timestamp(i.deal_epoch)
                -- the wall-clock reading, taken as the zone's local time
                ELSE timezone(i.time_zone,
                              timezone('UTC', to_timestamp(i.server_time)))
                END,
           CASE WHEN i.by_ticket THEN 'ticket' ELSE 'window' END
    FROM staged i;

    DELETE FROM recon_deal_in WHERE run_id = p_run;
    ANALYZE recon_deal;

    RETURN v_why;
END
$$;


--
-- 019's digest of the inputs, with what 040 adds: the window and the
-- items carried in transit (a run that starts from other items is
-- another run, whatever its own inputs; the same items carried by a
-- re-run of an earlier day are the same input).
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
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(x, 1)), 0)
                || ':' || coalesce(sum(hashtextextended(x, 2)), 0)
         FROM (SELECT concat_ws(':', 's', m.row_id, m.since_day) AS x
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
-- recon_prepare(): what a run matches, gathered once in its transaction:
--   recon_moved  the day's settled movements of client money, and those
--                an earlier run carried in transit;
--   recon_scope  our credits: named by one of those rows, made since the
--                last run's day ended (normally: during the day), or
--                carried in transit.
-- Before the credits are read, a settled payment with no credit whose
-- stored event an open case holds is replayed (sql/039): the provider's
-- own signed event, through the same rules as its first delivery.
--
CREATE FUNCTION mt5credit.recon_prepare(p_run bigint)
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
           false AS carried
    FROM recon_settlement s
    WHERE s.run_id = p_run
      AND s.category IN ('payment', 'refund', 'chargeback',
                         'chargeback_reversal', 'withdrawal');

    INSERT INTO recon_moved
    SELECT t.settlement_run_id, t.row_id, t.line_no, t.category,
           t.provider_key, t.payment_id, t.deposit_ref, t.currency,
           t.gross_minor, t.fee_minor, t.net_minor, t.created_at,
           t.payout_id, t.since_day, t.first_run_id, true
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
-- recon_tickets(): the done credits in scope whose deal the window's
-- fetch does not have (made on an earlier day, or past the fetch), for
-- the job to ask MT5 by ticket.  With the credit's login and currency:
-- a deal on that login is read in the currency the worker checked it
-- against at the call.
--
CREATE FUNCTION mt5credit.recon_tickets(p_run bigint)
RETURNS TABLE (mt5_server text, deal_ticket bigint, mt5_login bigint,
               currency text, digits integer)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
SET jit = off
AS $$
BEGIN
    PERFORM recon_prepare(p_run);

    RETURN QUERY
    SELECT c.mt5_server, c.mt5_deal_ticket, c.mt5_login, c.currency,
           cur.minor_digits::integer
    FROM recon_scope c
    JOIN currency cur ON cur.code = c.currency
    WHERE c.status = 'done' AND c.mt5_deal_ticket IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM recon_deal d
                      WHERE d.run_id = p_run
                        AND d.mt5_server = c.mt5_server
                        AND d.deal_ticket = c.mt5_deal_ticket)
    ORDER BY 1, 2;
END
$$;


--
-- recon_record_items() and recon_record_counts(): what a matching found,
-- written down.  They read recon_match()'s temporary tables (recon_found,
-- recon_pair, recon_moved, recon_scope) in its transaction,
-- so a later migration that changes the matching rules re-declares
-- recon_match() alone.  This file holds their current definitions.
--
-- The items and their cases, the three records side by side.
CREATE FUNCTION mt5credit.recon_record_items(p_run bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
SET jit = off
AS $$
DECLARE
    r       recon_run;
    v_item  record;
    v_case  bigint;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run;

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
                    'created_at', c.created_at, 'since_day', c.since_day)
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
END
$$;


-- The day at a glance: named counts of the run (recon_count).
CREATE FUNCTION mt5credit.recon_record_counts(p_run bigint, p_prev bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
SET jit = off
AS $$
BEGIN
    -- the day at a glance: each movement is matched (all three agree),
    -- mismatched (a finding other than being in flight), in transit, or
    -- neither
    CREATE TEMP TABLE recon_state ON COMMIT DROP AS
    SELECT p.movement,
           CASE WHEN f.broken THEN 'mismatched'
                WHEN f.pair_key IS NULL AND p.row_id IS NOT NULL
                     AND p.status = 'done' AND p.n_deals = 1
                THEN 'matched' END AS state,
           p.status, p.in_transit,
           (p.s_carried AND p.credit_id IS NOT NULL)
           OR (p.c_carried AND p.row_id IS NOT NULL) AS later
    FROM recon_pair p
    LEFT JOIN (SELECT pair_key, bool_or(kind <> 'open_at_cutoff') AS broken
               FROM recon_found WHERE pair_key IS NOT NULL
               GROUP BY pair_key) f ON f.pair_key = p.pair_key;

    INSERT INTO recon_count (run_id, dimension, name, n)
    SELECT p_run, 'summary', m.name, m.n
    FROM (SELECT count(*) FILTER (WHERE state = 'matched') AS matched,
                 count(*) FILTER (WHERE state = 'matched' AND later)
                     AS matched_later,
                 count(*) FILTER (WHERE in_transit) AS in_transit,
                 count(*) FILTER (WHERE status IN ('pending', 'claimed'))
                     AS pending,
                 count(*) FILTER (WHERE status = 'unknown') AS unknown
          FROM recon_state) x
    CROSS JOIN LATERAL (VALUES
        ('should_process',
         (SELECT count(*) FROM recon_moved WHERE NOT carried)),
        ('matched', x.matched),
        ('matched_later', x.matched_later),
        ('in_transit', x.in_transit),
        ('pending', x.pending),
        ('still_unknown', x.unknown),
        ('mismatched',
         (SELECT count(DISTINCT item_key) FROM recon_found
          WHERE kind <> 'open_at_cutoff')),
        ('fixed_since_last_run',
         (SELECT count(*) FROM recon_item i
          WHERE p_prev IS NOT NULL AND i.run_id = p_prev
            AND NOT EXISTS (SELECT 1 FROM recon_found f
                            WHERE f.kind = i.kind
                              AND f.item_key = i.item_key))),
        ('deals', (SELECT count(*) FROM recon_deal
                   WHERE run_id = p_run AND fetched_by = 'window')),
        ('deals_by_ticket', (SELECT count(*) FROM recon_deal
                             WHERE run_id = p_run
                               AND fetched_by = 'ticket')),
        ('settlement_rows',
         (SELECT count(*) FROM recon_settlement WHERE run_id = p_run)),
        ('replayed',
         (SELECT count(*) FROM webhook_event_replay
          WHERE recon_run_id = p_run))
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
END
$$;


--
-- recon_match(), 019's with the days joined.  Returns the verdict, or
-- 'unchanged:<run id>' when the inputs are those of the day's last run.
--
-- The three records meet in one pairing per movement of money:
--   settlement row  --provider key-->  credit  --reference-->  deal(s)
-- over the day's items and the ones carried in transit.  An unpaired
-- item inside the window is in transit; past it, a break.
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
    v_refpat   constant text := '^(dep|rfd|cbk|cbr|cor|wd):[0-9]+$';
BEGIN
    PERFORM recon_prepare(p_run);
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;
    v_window := r.match_window_days;

    v_digest := recon_digest(p_run);
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
           s.first_run_id AS s_first_run,
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
           -- in transit: unpaired, and its day inside the window
           (s.row_id IS NULL) <> (c.id IS NULL)
           AND (c.id IS NULL OR c.kind <> 'correction')
           AND r.business_day - coalesce(s.since_day, c.since_day)
               < v_window AS in_transit
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
        -- a row whose credit failed is a break at once: MT5 refused it
        ('settled_not_credited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('payment', 'chargeback_reversal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit)
              OR p.status = 'failed')),
        ('settled_not_debited', 'high',
         p.row_id IS NOT NULL
         AND p.movement IN ('refund', 'chargeback', 'withdrawal')
         AND ((p.credit_id IS NULL AND NOT p.in_transit)
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

    ANALYZE recon_found;

    PERFORM recon_record_items(p_run);

    -- what stays in transit, for the next run to start from
    INSERT INTO recon_transit_settlement
    SELECT p_run, s.run_id, s.since_day, s.first_run_id,
           r.business_day - s.since_day, s.row_id, s.line_no, s.category,
           s.provider_key, s.payment_id, s.deposit_ref, s.currency,
           s.gross_minor, s.fee_minor, s.net_minor, s.created_at,
           s.payout_id
    FROM recon_pair p
    JOIN recon_moved s ON s.row_id = p.row_id
    WHERE p.in_transit AND p.credit_id IS NULL;

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

    v_verdict := CASE
        WHEN EXISTS (SELECT 1 FROM recon_found
                     WHERE kind <> 'open_at_cutoff') THEN 'breaks'
        -- in transit is no break and nothing in flight: a timing
        -- difference, carried to the next run
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


REVOKE ALL ON FUNCTION
    mt5credit.recon_window(bigint, integer),
    mt5credit.recon_prepare(bigint),
    mt5credit.recon_record_items(bigint),
    mt5credit.recon_record_counts(bigint, bigint),
    mt5credit.recon_tickets(bigint)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.recon_window(bigint, integer),
    mt5credit.recon_tickets(bigint)
    TO mt5credit_recon;

GRANT SELECT ON mt5credit.recon_transit_settlement,
    mt5credit.recon_transit_credit, mt5credit.recon_matched_later,
    mt5credit.recon_paired_ahead
    TO mt5credit_recon, mt5credit_reader, mt5credit_operator;
