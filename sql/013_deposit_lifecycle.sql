--
-- 013: a deposit's own status, forward only.
--
--   created --provider says pending--> pending
--   created|pending --paid--> succeeded
--   created|pending --failed--> failed
--   created|pending|failed --expired, abandoned--> closed
--   failed|closed --paid after all--> succeeded   (the money is real)
--
-- Nothing leaves succeeded: refunds and chargebacks are records of their
-- own (mt5_credit).  What the webhook path and the provider query path
-- learn meets here, in deposit_observe(): a forward change is applied
-- with a conditional UPDATE; the same status again changes nothing; a
-- change backwards (a failure reported after the success, a late
-- "pending") is not applied but recorded as a conflict, with a case.
-- A trigger refuses every other change, whoever makes it.
--

CREATE TABLE mt5credit.deposit_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    why          text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.deposit_transition VALUES
    ('created', 'pending',   'the provider has the payment in progress'),
    ('created', 'succeeded', 'paid'),
    ('pending', 'succeeded', 'paid'),
    ('created', 'failed',    'the payment failed'),
    ('pending', 'failed',    'the payment failed'),
    ('created', 'closed',    'expired or abandoned'),
    ('pending', 'closed',    'expired or abandoned'),
    ('failed',  'closed',    'given up after the failure'),
    ('failed',  'succeeded', 'paid after all: the money is real'),
    ('closed',  'succeeded', 'paid after all: the money is real');


-- append-only: every status change of a deposit, and what reported it
CREATE TABLE mt5credit.deposit_history (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deposit_id   bigint      NOT NULL REFERENCES mt5credit.deposit (id),
    from_status  text        NOT NULL,
    to_status    text        NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text        NOT NULL,
    detail       jsonb       NOT NULL DEFAULT '{}'
                 CHECK (jsonb_typeof(detail) = 'object'),
    FOREIGN KEY (from_status, to_status)
        REFERENCES mt5credit.deposit_transition (from_status, to_status)
);

CREATE INDEX deposit_history_deposit_idx
    ON mt5credit.deposit_history (deposit_id, id);

-- a report that would have moved a deposit backwards: kept, not applied
CREATE TABLE mt5credit.deposit_conflict (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deposit_id   bigint      NOT NULL REFERENCES mt5credit.deposit (id),
    status       text        NOT NULL,   -- what the deposit stays at
    reported     text        NOT NULL
                 CHECK (reported IN ('created', 'pending', 'succeeded',
                                     'failed', 'closed')),
    source       text        NOT NULL CHECK (length(source) BETWEEN 1 AND 200),
    detail       jsonb       NOT NULL DEFAULT '{}'
                 CHECK (jsonb_typeof(detail) = 'object'),
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    case_id      bigint      NOT NULL REFERENCES mt5credit.case (id),
    CHECK (status <> reported)
);

CREATE INDEX deposit_conflict_deposit_idx
    ON mt5credit.deposit_conflict (deposit_id);

CREATE TRIGGER deposit_history_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.deposit_history
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER deposit_conflict_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.deposit_conflict
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


--
-- The last line: any status change of a deposit is one of the legal
-- transitions, and is written to its history.  What a deposit is about
-- (client, login, amounts, rate) never changes.
--
CREATE FUNCTION mt5credit.deposit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF (NEW.client_id, NEW.idempotency_key, NEW.provider, NEW.mt5_server,
        NEW.mt5_login, NEW.amount_minor, NEW.currency, NEW.account_currency,
        NEW.credit_amount_minor, NEW.fx_rate, NEW.fx_source, NEW.fx_at,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.client_id, OLD.idempotency_key, OLD.provider, OLD.mt5_server,
        OLD.mt5_login, OLD.amount_minor, OLD.currency, OLD.account_currency,
        OLD.credit_amount_minor, OLD.fx_rate, OLD.fx_source, OLD.fx_at,
        OLD.created_at)
    THEN
        RAISE EXCEPTION 'deposit % is immutable except for its status',
                        OLD.id USING ERRCODE = 'MC050';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM deposit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'deposit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC051';
        END IF;

        INSERT INTO deposit_history (deposit_id, from_status, to_status,
                                     actor, detail)
        VALUES (OLD.id, OLD.status, NEW.status, credit_actor(),
                credit_detail());
    END IF;

    RETURN NEW;
END
$$;

CREATE TRIGGER deposit_guard_and_log
    BEFORE UPDATE ON mt5credit.deposit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.deposit_guard_and_log();

CREATE TRIGGER deposit_no_delete
    BEFORE DELETE ON mt5credit.deposit
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- deposit_observe(): what a source (the webhook path, the provider query,
-- a person) says a deposit's status is.  Returns
--   'applied'    the deposit moved forward to it;
--   'unchanged'  it already was there;
--   'conflict'   it would have gone backwards: not applied, recorded,
--                a case opened (once per deposit, status and report).
-- Serialized per deposit (the row is locked), so two sources reporting
-- at once are decided one after the other.
--
CREATE FUNCTION mt5credit.deposit_observe(p_deposit bigint, p_status text,
    p_source text, p_detail jsonb DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d        deposit;
    v_rows   integer;
    v_case   bigint;
    v_saved  text;
BEGIN
    IF p_status IS NULL OR p_status NOT IN ('created', 'pending',
                                            'succeeded', 'failed', 'closed')
    THEN
        RAISE EXCEPTION 'not a deposit status: "%"', coalesce(p_status, '')
            USING ERRCODE = 'MC052';
    END IF;

    SELECT * INTO d FROM deposit WHERE id = p_deposit FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no deposit %', p_deposit USING ERRCODE = 'MC052';
    END IF;

    IF d.status = p_status THEN
        RETURN 'unchanged';
    END IF;

    IF EXISTS (SELECT 1 FROM deposit_transition
               WHERE from_status = d.status AND to_status = p_status)
    THEN
        -- the history row's detail, for this one update only: the
        -- caller's own detail (a credit's history) is put back after
        v_saved := current_setting('mt5credit.detail', true);
        PERFORM set_config('mt5credit.detail',
            (coalesce(p_detail, '{}')
             || jsonb_build_object('source', p_source))::text, true);

        UPDATE deposit SET status = p_status, updated_at = now()
        WHERE id = d.id AND status = d.status;
        GET DIAGNOSTICS v_rows = ROW_COUNT;

        PERFORM set_config('mt5credit.detail', coalesce(v_saved, ''), true);
        IF v_rows <> 1 THEN
            RAISE EXCEPTION 'deposit % moved under a lock', d.id
                USING ERRCODE = 'MC053';
        END IF;
        RETURN 'applied';
    END IF;

    v_case := open_case('deposit_status_conflict', 'high',
        'deposit_status_conflict:' || d.id || ':' || d.status || ':'
            || p_status,
        jsonb_build_object('deposit', d.reference, 'status', d.status,
                           'reported', p_status, 'source', p_source,
                           'detail', p_detail),
        NULL, d.id, NULL, d.amount_minor, d.currency);

    INSERT INTO deposit_conflict (deposit_id, status, reported, source,
                                  detail, case_id)
    VALUES (d.id, d.status, p_status, p_source, coalesce(p_detail, '{}'),
            v_case);
    RETURN 'conflict';
END
$$;

COMMENT ON FUNCTION mt5credit.deposit_observe(bigint, text, text, jsonb) IS
    'The one way a deposit''s status changes: forward applied, backwards '
    'recorded as a conflict with a case.';
