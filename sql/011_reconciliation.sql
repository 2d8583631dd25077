--
-- 011: the daily three-way reconciliation.
--
-- For one provider, one business day (in an explicit time zone) and one
-- settlement currency, three independent records of the same money are
-- matched both ways:
--
--   settlement  what the provider says it moved (its settlement file)
--   credit      what we decided to move (mt5_credit)
--   deal        what MT5 says it moved (balance deals, fetched in full)
--
-- Every difference becomes an item of the run and a case for a person,
-- with the three records side by side.  Nothing here moves money.
--
-- A run is one transaction: the inputs are loaded into the staging tables
-- (COPY, the only thing the job may write directly), checked, moved into
-- the run's own tables and matched.  A source that cannot be shown
-- complete makes the run `incomplete` with its reason and no items: a
-- partial input must never produce "differences" a person would chase,
-- nor hide real ones.
--
-- Verdicts, worst first: incomplete, breaks (a mismatch), pending (only
-- credits still in flight at the cut-off), reconciled.


-- credits of a day: the window scan
CREATE INDEX mt5_credit_created_idx ON mt5credit.mt5_credit (created_at);


CREATE TABLE mt5credit.recon_run (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text        NOT NULL
                       CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    business_day       date        NOT NULL,
    time_zone          text        NOT NULL,
    currency           text        NOT NULL
                       REFERENCES mt5credit.currency (code),
    -- [window_start, window_end) is the day; deals are fetched up to
    -- deal_window_end so a credit made late in the day finds its deal
    window_start       timestamptz NOT NULL,
    window_end         timestamptz NOT NULL,
    deal_window_end    timestamptz NOT NULL,
    settlement_format  text        NOT NULL
                       CHECK (settlement_format IN ('stripe', 'generic')),
    settlement_sha256  text        NOT NULL
                       CHECK (settlement_sha256 ~ '^[0-9a-f]{64}$'),
    control_sha256     text        CHECK (control_sha256 ~ '^[0-9a-f]{64}$'),
    -- MT5's deals as fetched (order-independent, computed by the job)
    deals_digest       text        CHECK (deals_digest ~ '^[0-9a-f]{32}$'),
    -- all inputs (file, control totals, deals, the credits' state): the
    -- same digest twice is the same run, not a new one
    input_digest       text,
    verdict            text        NOT NULL
                       CHECK (verdict IN ('running', 'incomplete', 'breaks',
                                          'pending', 'reconciled')),
    reason             text,
    started_by         text        NOT NULL DEFAULT session_user,
    started_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    previous_run_id    bigint      REFERENCES mt5credit.recon_run (id),
    CHECK (window_end > window_start),
    CHECK (deal_window_end >= window_end),
    CHECK ((verdict = 'incomplete') = (reason IS NOT NULL)),
    CHECK ((verdict = 'running') = (finished_at IS NULL)),
    CHECK (verdict IN ('running', 'incomplete') OR input_digest IS NOT NULL)
);

COMMENT ON TABLE mt5credit.recon_run IS
    'One reconciliation of one provider, day and currency; append-only '
    'once finished.';

CREATE INDEX recon_run_day_idx
    ON mt5credit.recon_run (provider, business_day, currency, id);


-- What the provider settled, one row per settlement line, normalized by
-- the importer (batch/mc_settle.c).  Amounts in minor units of the run's
-- currency, signed as the provider has them.
--
-- The bulk tables below (a million rows a day each) carry no per-row
-- foreign key and no unique index: PostgreSQL checks and maintains those
-- one row at a time, which was most of the cost of a load.  recon_load()
-- is their only writer: it takes run_id from the run it checked, and
-- refuses a row id or deal twice and an unknown currency for the whole
-- set in one statement each.  Rows are appended run after run, so a BRIN
-- index finds a run's rows for the price of a few pages.  Once written
-- they never change (statement triggers refuse UPDATE, DELETE, TRUNCATE).
CREATE TABLE mt5credit.recon_settlement (
    run_id        bigint      NOT NULL,
    row_id        text        NOT NULL CHECK (length(row_id) BETWEEN 1 AND 255),
    line_no       bigint      NOT NULL CHECK (line_no > 0),
    category      text        NOT NULL
                  CHECK (category IN ('payment', 'refund', 'chargeback',
                                      'chargeback_reversal', 'fee', 'payout',
                                      'other')),
    provider_key  text,
    payment_id    text,
    deposit_ref   text,
    currency      text        NOT NULL,
    gross_minor   bigint      NOT NULL,
    fee_minor     bigint      NOT NULL,
    net_minor     bigint      NOT NULL,
    created_at    timestamptz NOT NULL,
    payout_id     text,
    CHECK (net_minor = gross_minor - fee_minor),
    -- a movement of client money always names its key
    CHECK (category IN ('fee', 'payout', 'other')
           OR provider_key IS NOT NULL)
);

CREATE INDEX recon_settlement_run_brin
    ON mt5credit.recon_settlement USING brin (run_id);


-- The payouts' control totals: each payout's rows add up to its amount.
CREATE TABLE mt5credit.recon_control (
    run_id        bigint      NOT NULL REFERENCES mt5credit.recon_run (id),
    payout_id     text        NOT NULL,
    line_no       bigint      NOT NULL,
    currency      text        NOT NULL REFERENCES mt5credit.currency (code),
    amount_minor  bigint      NOT NULL,
    row_count     bigint      CHECK (row_count >= 0),
    PRIMARY KEY (run_id, payout_id)
);


-- MT5's balance deals in the fetch window, from every configured server.
-- amount_minor is signed (a debit is negative), in the group's currency.
CREATE TABLE mt5credit.recon_deal (
    run_id        bigint      NOT NULL,
    mt5_server    text        NOT NULL,
    deal_ticket   bigint      NOT NULL CHECK (deal_ticket > 0),
    mt5_login     bigint      NOT NULL CHECK (mt5_login > 0),
    amount_minor  bigint      NOT NULL,
    currency      text        NOT NULL,
    comment       text        NOT NULL,
    deal_time     timestamptz NOT NULL
);

CREATE INDEX recon_deal_run_brin
    ON mt5credit.recon_deal USING brin (run_id);

CREATE TRIGGER recon_settlement_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_settlement
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER recon_deal_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.recon_deal
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


-- One difference found by a run.  The three records side by side, as
-- they were when the run saw them.
CREATE TABLE mt5credit.recon_item (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id        bigint      NOT NULL REFERENCES mt5credit.recon_run (id),
    kind          text        NOT NULL
                  CHECK (kind IN ('settled_not_credited',
                                  'settled_not_debited',
                                  'credited_not_settled',
                                  'debited_not_settled',
                                  'credit_without_deal',
                                  'deal_unknown_reference',
                                  'deal_duplicate',
                                  'deal_without_reference',
                                  'amount_mismatch',
                                  'currency_mismatch',
                                  'login_mismatch',
                                  'open_at_cutoff')),
    item_key      text        NOT NULL,
    severity      text        NOT NULL
                  CHECK (severity IN ('low', 'medium', 'high', 'critical')),
    movement      text        NOT NULL
                  CHECK (movement IN ('payment', 'refund', 'chargeback',
                                      'chargeback_reversal', 'correction',
                                      'unattributed')),
    amount_minor  bigint,
    currency      text,
    settlement    jsonb,
    credit        jsonb,
    deals         jsonb       NOT NULL DEFAULT '[]'
                  CHECK (jsonb_typeof(deals) = 'array'),
    case_id       bigint      NOT NULL REFERENCES mt5credit.case (id),
    UNIQUE (run_id, kind, item_key)
);

CREATE INDEX recon_item_case_idx ON mt5credit.recon_item (case_id);


-- The day at a glance: named counts per run.  dimension 'summary' holds
-- should_process, matched, pending, still_unknown, fixed_since_last_run,
-- mismatched, deals; 'kind' one count per mismatch kind; 'matched' and
-- 'mismatched' one count per movement (payment, refund, ...).
CREATE TABLE mt5credit.recon_count (
    run_id     bigint  NOT NULL REFERENCES mt5credit.recon_run (id),
    dimension  text    NOT NULL
               CHECK (dimension IN ('summary', 'kind', 'matched',
                                    'mismatched')),
    name       text    NOT NULL,
    n          bigint  NOT NULL CHECK (n >= 0),
    PRIMARY KEY (run_id, dimension, name)
);


--
-- Staging: the only tables the job writes directly (COPY), one set of
-- rows per run.  Unlogged: they live for one transaction.
--
CREATE UNLOGGED TABLE mt5credit.recon_settlement_in (
    run_id        bigint  NOT NULL,
    line_no       bigint  NOT NULL,
    row_id        text    NOT NULL,
    category      text    NOT NULL,
    provider_key  text,
    payment_id    text,
    deposit_ref   text,
    currency      text    NOT NULL,
    gross_minor   bigint  NOT NULL,
    fee_minor     bigint  NOT NULL,
    net_minor     bigint  NOT NULL,
    created_text  text    NOT NULL,
    created_utc   boolean NOT NULL,
    payout_id     text
);

CREATE UNLOGGED TABLE mt5credit.recon_control_in (
    run_id        bigint  NOT NULL,
    line_no       bigint  NOT NULL,
    payout_id     text    NOT NULL,
    currency      text    NOT NULL,
    amount_minor  bigint  NOT NULL,
    row_count     bigint
);

CREATE UNLOGGED TABLE mt5credit.recon_deal_in (
    run_id        bigint  NOT NULL,
    mt5_server    text    NOT NULL,
    deal_ticket   bigint  NOT NULL,
    mt5_login     bigint  NOT NULL,
    amount_minor  bigint  NOT NULL,
    currency      text    NOT NULL,
    comment       text    NOT NULL,
    deal_epoch    bigint  NOT NULL      -- UTC seconds
);

REVOKE ALL ON mt5credit.recon_settlement_in, mt5credit.recon_control_in,
    mt5credit.recon_deal_in FROM PUBLIC;
GRANT INSERT ON mt5credit.recon_settlement_in, mt5credit.recon_control_in,
    mt5credit.recon_deal_in TO mt5credit_recon;


--
-- recon_begin(): a new run row.  The window is the business day in its
-- own time zone, so a 23- or 25-hour day is what the calendar says.
--
CREATE FUNCTION mt5credit.recon_begin(p_provider text, p_day date,
    p_time_zone text, p_currency text, p_format text,
    p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval)
RETURNS TABLE (run_id bigint, window_start timestamptz,
               window_end timestamptz, deal_window_end timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_start  timestamptz;
    v_end    timestamptz;
    v_deals  timestamptz;
    v_id     bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = p_time_zone)
    THEN
        RAISE EXCEPTION 'unknown time zone "%"', p_time_zone
            USING ERRCODE = 'MC030';
    END IF;

    v_start := p_day::timestamp AT TIME ZONE p_time_zone;
    v_end := (p_day + 1)::timestamp AT TIME ZONE p_time_zone;
    -- deals cannot be fetched from the future
    v_deals := least(v_end + p_deal_grace, greatest(now(), v_end));

    INSERT INTO recon_run (provider, business_day, time_zone, currency,
                           window_start, window_end, deal_window_end,
                           settlement_format, settlement_sha256,
                           control_sha256, verdict)
    VALUES (p_provider, p_day, p_time_zone, p_currency, v_start, v_end,
            v_deals, p_format, p_settlement_sha256, p_control_sha256,
            'running')
    RETURNING id INTO v_id;

    RETURN QUERY SELECT v_id, v_start, v_end, v_deals;
END
$$;


-- the run being loaded, locked; a finished run takes nothing more
CREATE FUNCTION mt5credit.recon_running(p_run bigint)
RETURNS mt5credit.recon_run
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  recon_run;
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;
    IF r.verdict <> 'running' THEN
        RAISE EXCEPTION 'run % is finished', p_run USING ERRCODE = 'MC031';
    END IF;
    RETURN r;
END
$$;


--
-- recon_load_settlement() and recon_load_deals(): move the staged inputs
-- into the run, refusing what a line parser cannot see: a row id twice,
-- a row outside the day, a currency we do not know.  Errors name the
-- file's lines.  Two calls, because the job loads the settlement file
-- while MT5's deals are still being fetched.  Each returns NULL, or why
-- its input is not complete (the file's control totals; deals that
-- contradict themselves); p_deals_digest is the job's digest of the
-- deals as it fetched them.
--
CREATE FUNCTION mt5credit.recon_load_settlement(p_run bigint)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
-- sorts and hashes of a million rows in memory, not in temp files
SET work_mem = '32MB'
-- a plan compiled per run costs more than it saves on set operations
SET jit = off
AS $$
DECLARE
    r       recon_run;
    v_bad   record;
BEGIN
    r := recon_running(p_run);

    SELECT min(line_no) AS first, max(line_no) AS second, row_id INTO v_bad
    FROM recon_settlement_in WHERE run_id = p_run
    GROUP BY row_id HAVING count(*) > 1
    ORDER BY min(line_no) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement lines % and %: the same row id "%"',
                        v_bad.first, v_bad.second, v_bad.row_id
            USING ERRCODE = 'MC032';
    END IF;

    SELECT line_no, currency INTO v_bad FROM recon_settlement_in i
    WHERE run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM currency c WHERE c.code = i.currency)
    ORDER BY line_no LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement line %: unknown currency "%"',
                        v_bad.line_no, v_bad.currency
            USING ERRCODE = 'MC032';
    END IF;

    INSERT INTO recon_settlement (run_id, row_id, line_no, category,
                                  provider_key, payment_id, deposit_ref,
                                  currency, gross_minor, fee_minor, net_minor,
                                  created_at, payout_id)
    SELECT run_id, row_id, line_no, category, nullif(provider_key, ''),
           nullif(payment_id, ''), nullif(deposit_ref, ''), currency,
           gross_minor, fee_minor, net_minor,
           created_text::timestamp AT TIME ZONE
               CASE WHEN created_utc THEN 'UTC' ELSE r.time_zone END,
           nullif(payout_id, '')
    FROM recon_settlement_in WHERE run_id = p_run;

    SELECT line_no, created_at INTO v_bad FROM recon_settlement
    WHERE run_id = p_run
      AND (created_at < r.window_start OR created_at >= r.window_end)
    ORDER BY line_no LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'settlement line %: created % is outside the '
                        'business day % (%)', v_bad.line_no,
                        v_bad.created_at AT TIME ZONE r.time_zone,
                        r.business_day, r.time_zone
            USING ERRCODE = 'MC033';
    END IF;

    SELECT min(line_no) AS first, max(line_no) AS second, payout_id INTO v_bad
    FROM recon_control_in WHERE run_id = p_run
    GROUP BY payout_id HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'control lines % and %: payout "%" twice',
                        v_bad.first, v_bad.second, v_bad.payout_id
            USING ERRCODE = 'MC032';
    END IF;

    INSERT INTO recon_control (run_id, payout_id, line_no, currency,
                               amount_minor, row_count)
    SELECT run_id, payout_id, line_no, currency, amount_minor, row_count
    FROM recon_control_in WHERE run_id = p_run;

    -- the planner must know a day's rows are here (autovacuum comes later)
    ANALYZE recon_settlement;

    DELETE FROM recon_settlement_in WHERE run_id = p_run;
    DELETE FROM recon_control_in WHERE run_id = p_run;

    RETURN recon_completeness(p_run);
END
$$;


CREATE FUNCTION mt5credit.recon_load_deals(p_run bigint, p_deals_digest text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
SET work_mem = '32MB'
-- a plan compiled per run costs more than it saves on set operations
SET jit = off
AS $$
DECLARE
    r       recon_run;
    v_bad   record;
    v_why   text;
    v_twice boolean;
BEGIN
    r := recon_running(p_run);

    UPDATE recon_run SET deals_digest = p_deals_digest WHERE id = p_run;

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

    IF v_twice THEN
        INSERT INTO recon_deal (run_id, mt5_server, deal_ticket, mt5_login,
                                amount_minor, currency, comment, deal_time)
        SELECT DISTINCT ON (mt5_server, deal_ticket)
               run_id, mt5_server, deal_ticket, mt5_login, amount_minor,
               currency, comment, to_timestamp(deal_epoch)
        FROM recon_deal_in WHERE run_id = p_run
        ORDER BY mt5_server, deal_ticket;
    ELSE
        INSERT INTO recon_deal (run_id, mt5_server, deal_ticket, mt5_login,
                                amount_minor, currency, comment, deal_time)
        SELECT run_id, mt5_server, deal_ticket, mt5_login, amount_minor,
               currency, comment, to_timestamp(deal_epoch)
        FROM recon_deal_in WHERE run_id = p_run;
    END IF;

    DELETE FROM recon_deal_in WHERE run_id = p_run;
    ANALYZE recon_deal;

    RETURN v_why;
END
$$;


--
-- Is the settlement file complete?  Only its control totals can say:
-- every payout's rows add up to the payout (and count, when given), every
-- row in a payout has a control line, every control line has rows.
-- Without control totals, completeness is unknown, and said so.
--
CREATE FUNCTION mt5credit.recon_completeness(p_run bigint)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v  record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM recon_control WHERE run_id = p_run) THEN
        RETURN 'no control totals: the settlement file cannot be shown '
               'complete';
    END IF;

    SELECT s.payout_id, min(s.line_no) AS line_no INTO v
    FROM recon_settlement s
    WHERE s.run_id = p_run
      AND NOT EXISTS (SELECT 1 FROM recon_control c
                      WHERE c.run_id = p_run
                        AND c.payout_id = s.payout_id)
    GROUP BY s.payout_id
    ORDER BY 2 LIMIT 1;
    IF FOUND THEN
        RETURN 'settlement line ' || v.line_no || ': '
               || coalesce('payout "' || v.payout_id || '"',
                           'a row in no payout')
               || ' has no control total';
    END IF;

    SELECT c.payout_id, c.line_no, c.amount_minor, c.row_count,
           coalesce(sum(s.net_minor), 0) AS net, count(s.row_id) AS n
    INTO v
    FROM recon_control c
    LEFT JOIN recon_settlement s
           ON s.run_id = c.run_id AND s.payout_id = c.payout_id
    WHERE c.run_id = p_run
    GROUP BY c.payout_id, c.line_no, c.amount_minor, c.row_count
    HAVING coalesce(sum(s.net_minor), 0) <> c.amount_minor
        OR (c.row_count IS NOT NULL AND count(s.row_id) <> c.row_count)
    ORDER BY c.line_no LIMIT 1;
    IF FOUND THEN
        RETURN 'payout "' || v.payout_id || '" (control line '
               || v.line_no || '): its rows add up to ' || v.net
               || ' minor units in ' || v.n || ' rows, the control total says '
               || v.amount_minor
               || coalesce(' in ' || v.row_count || ' rows', '');
    END IF;

    RETURN NULL;
END
$$;


--
-- recon_digest(): everything a run's result depends on: the file, the
-- control totals, MT5's deals (the job's digest), and the state of every
-- credit in scope.  The same digest as the day's last finished run means
-- the same result: the caller keeps that run instead of writing another.
-- The credits' part is a sum of 64-bit hashes, two of them: independent
-- of order, so no sort of a million rows.
--
CREATE FUNCTION mt5credit.recon_digest(p_run bigint)
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
         FROM (SELECT concat_ws(':', c.id, c.status, c.mt5_deal_ticket) AS x
               FROM recon_scope c) h)));
END
$$;


--
-- recon_match(): the matching, in sets.  Returns the verdict, or
-- 'unchanged:<run id>' when the inputs are those of the day's last run
-- (the caller then rolls back: a re-run adds nothing).
--
-- The three records meet in one pairing per movement of money:
--   settlement row  --provider key-->  credit  --reference-->  deal(s)
-- and a refund whose key the provider spells differently in the file
-- than in its webhook (Stripe's cumulative amount_refunded) is paired
-- by original payment and amount, one to one.
--
-- Written for a million rows a side: every step is one pass with hash
-- joins and aggregates; only the few rows that differ are looked at one
-- by one (to open their cases).
--
CREATE FUNCTION mt5credit.recon_match(p_run bigint)
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
    v_refpat   constant text := '^(dep|rfd|cbk|cbr|cor):[0-9]+$';
BEGIN
    SELECT * INTO STRICT r FROM recon_run WHERE id = p_run FOR UPDATE;

    -- the settled movements of client money
    CREATE TEMP TABLE recon_moved ON COMMIT DROP AS
    SELECT * FROM recon_settlement
    WHERE run_id = p_run
      AND category IN ('payment', 'refund', 'chargeback',
                       'chargeback_reversal');
    ANALYZE recon_moved;

    -- our credits in scope: named by a settled row, or made for this
    -- provider and currency during the day
    CREATE TEMP TABLE recon_scope ON COMMIT DROP AS
    SELECT c.*,
           CASE WHEN c.original_credit_id IS NOT NULL THEN
               (SELECT o.provider_payment_id FROM mt5_credit o
                WHERE o.id = c.original_credit_id) END AS original_key
    FROM mt5_credit c
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
           c.original_key, c.provider_payment_id,
           coalesce(s.category,
                    CASE WHEN c.kind = 'deposit' THEN 'payment'
                         WHEN c.kind = 'refund' THEN 'refund'
                         WHEN c.kind = 'correction' THEN 'correction'
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
         p.row_id IS NOT NULL AND p.movement IN ('refund', 'chargeback')
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
               AND p.d_login = p.mt5_login AND p.d_server = p.mt5_server,
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
                    'created_at', c.created_at) END AS credit,
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


--
-- recon_incomplete(): records a run that could not be shown complete, in
-- its own transaction after the inputs were rolled back: the run, the
-- reason, nothing else.
--
CREATE FUNCTION mt5credit.recon_incomplete(p_provider text, p_day date,
    p_time_zone text, p_currency text, p_format text,
    p_settlement_sha256 text, p_control_sha256 text, p_deal_grace interval,
    p_reason text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    SELECT run_id INTO v_id
    FROM recon_begin(p_provider, p_day, p_time_zone, p_currency, p_format,
                     p_settlement_sha256, p_control_sha256, p_deal_grace);
    UPDATE recon_run
    SET verdict = 'incomplete', reason = p_reason, finished_at = now()
    WHERE id = v_id AND verdict = 'running';
    RETURN v_id;
END
$$;


-- a finished run is a record: nothing about it changes afterwards
CREATE FUNCTION mt5credit.recon_run_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.verdict <> 'running' THEN
        RAISE EXCEPTION 'reconciliation run % is finished', OLD.id
            USING ERRCODE = 'MC031';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER recon_run_finished_is_final
    BEFORE UPDATE ON mt5credit.recon_run
    FOR EACH ROW EXECUTE FUNCTION mt5credit.recon_run_guard();

CREATE TRIGGER recon_run_no_delete
    BEFORE DELETE ON mt5credit.recon_run
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER recon_item_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.recon_item
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


GRANT EXECUTE ON FUNCTION
    mt5credit.recon_begin(text, date, text, text, text, text, text, interval),
    mt5credit.recon_load_settlement(bigint),
    mt5credit.recon_load_deals(bigint, text),
    mt5credit.recon_match(bigint),
    mt5credit.recon_incomplete(text, date, text, text, text, text, text,
                               interval, text)
    TO mt5credit_recon;

GRANT SELECT ON mt5credit.recon_run, mt5credit.recon_item,
    mt5credit.recon_count, mt5credit.currency
    TO mt5credit_recon, mt5credit_reader, mt5credit_operator;

-- the MT5 servers' groups to fetch deals from, and the run's currency's
-- digits, are the job's configuration; it reads nothing else
