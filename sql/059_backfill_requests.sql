--
-- 059: a person asks for a backfill; the next backfill run does it.
--
-- `mt5credit backfill stripe` (047, its timer) reads the provider's list
-- of undelivered events since --since (the timer's window).  A person
-- who learns of a longer outage ("Stripe could not reach us since
-- Friday") asks for one from further back: through the console
-- (console_act's 'backfill') or SQL, with why.  The request is a row;
-- the backfill program, holding the provider's API key, takes the open
-- requests of its provider at its next run, reads from the earliest of
-- them, and records the outcome on each.  A run whose list was not
-- complete gives them back, for the run after.  The database never
-- calls the provider.
--
-- console_act() (057's) is re-declared here: this file holds its current
-- definition.
--

CREATE TABLE mt5credit.backfill_request (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider      text        NOT NULL
                  CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    since         timestamptz NOT NULL,
    reason        text        NOT NULL
                  CHECK (length(btrim(reason)) BETWEEN 1 AND 2000),
    requested_by  text        NOT NULL DEFAULT mt5credit.person(),
    requested_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    taken_by      text,
    taken_at      timestamptz,
    finished_at   timestamptz,
    outcome       text        CHECK (length(outcome) <= 2000),
    -- a backfill reads the past, and Stripe keeps 30 days of events
    CHECK (since <= requested_at
           AND since >= requested_at - interval '30 days'),
    CHECK ((taken_by IS NULL) = (taken_at IS NULL)),
    CHECK ((finished_at IS NULL) = (outcome IS NULL)),
    CHECK (finished_at IS NULL OR taken_at IS NOT NULL)
);

COMMENT ON TABLE mt5credit.backfill_request IS
    'A person''s request to backfill a provider''s undelivered events from '
    'further back; taken and finished by the backfill program (059).';

-- the open ones of a provider, found without a scan
CREATE INDEX backfill_request_open_idx ON mt5credit.backfill_request
    (provider) WHERE finished_at IS NULL;

-- what was asked never changes: only taken, given back, finished
CREATE FUNCTION mt5credit.backfill_request_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.since, NEW.reason, NEW.requested_by,
        NEW.requested_at)
       IS DISTINCT FROM
       (OLD.provider, OLD.since, OLD.reason, OLD.requested_by,
        OLD.requested_at)
       OR OLD.finished_at IS NOT NULL
    THEN
        RAISE EXCEPTION 'backfill request %: what was asked, and a finished '
                        'request, never change', OLD.id
            USING ERRCODE = 'MC096';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER backfill_request_guard
    BEFORE UPDATE ON mt5credit.backfill_request
    FOR EACH ROW EXECUTE FUNCTION mt5credit.backfill_request_guard();

CREATE TRIGGER backfill_request_no_delete
    BEFORE DELETE ON mt5credit.backfill_request
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

REVOKE ALL ON mt5credit.backfill_request FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.backfill_request_guard() FROM PUBLIC;


-- the desk asks (console_act's 'backfill', or SQL)
CREATE FUNCTION mt5credit.backfill_request_add(p_provider text,
    p_since timestamptz, p_reason text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_since IS NULL OR p_since > clock_timestamp()
       OR p_since < clock_timestamp() - interval '30 days'
    THEN
        RAISE EXCEPTION 'a backfill reads from a time in the last 30 days, '
                        'not %', coalesce(p_since::text, 'none')
            USING ERRCODE = 'MC096';
    END IF;

    INSERT INTO backfill_request (provider, since, reason)
    VALUES (p_provider, p_since, p_reason)
    RETURNING id INTO v_id;

    RETURN v_id;
END
$$;


-- the backfill program takes its provider's open requests (and those a
-- run took an hour ago and never finished: it died)
CREATE FUNCTION mt5credit.backfill_requests_take(p_provider text)
RETURNS TABLE (id bigint, since timestamptz)
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    UPDATE backfill_request b
    SET taken_by = session_user, taken_at = clock_timestamp()
    WHERE b.provider = p_provider AND b.finished_at IS NULL
      AND (b.taken_at IS NULL
           OR b.taken_at < clock_timestamp() - interval '1 hour')
    RETURNING b.id, b.since
$$;


-- ...and finishes them with what the run found, or, when its list was
-- not complete, gives them back for the next run; the rows it changed
CREATE FUNCTION mt5credit.backfill_requests_done(p_ids bigint[],
    p_complete boolean, p_outcome text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n  integer;
BEGIN
    IF p_complete THEN
        UPDATE backfill_request
        SET finished_at = clock_timestamp(), outcome = left(p_outcome, 2000)
        WHERE id = ANY (p_ids) AND finished_at IS NULL
          AND taken_by = session_user;
    ELSE
        UPDATE backfill_request
        SET taken_by = NULL, taken_at = NULL
        WHERE id = ANY (p_ids) AND finished_at IS NULL
          AND taken_by = session_user;
    END IF;

    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;


CREATE FUNCTION mt5credit.backfill_requests_list()
RETURNS TABLE (id bigint, provider text, since timestamptz, reason text,
               requested_by text, requested_at timestamptz,
               taken_at timestamptz, finished_at timestamptz, outcome text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT b.id, b.provider, b.since, b.reason, b.requested_by,
           b.requested_at, b.taken_at, b.finished_at, b.outcome
    FROM backfill_request b
    ORDER BY b.id DESC
    LIMIT 100
$$;

REVOKE ALL ON FUNCTION
    mt5credit.backfill_request_add(text, timestamptz, text),
    mt5credit.backfill_requests_take(text),
    mt5credit.backfill_requests_done(bigint[], boolean, text),
    mt5credit.backfill_requests_list()
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    mt5credit.backfill_request_add(text, timestamptz, text)
    TO mt5credit_operator;
GRANT EXECUTE ON FUNCTION
    mt5credit.backfill_requests_take(text),
    mt5credit.backfill_requests_done(bigint[], boolean, text)
    TO mt5credit_query;
GRANT EXECUTE ON FUNCTION mt5credit.backfill_requests_list()
    TO mt5credit_operator, mt5credit_reader;


-- 057's console_act(), and a backfill request
CREATE OR REPLACE FUNCTION mt5credit.console_act(p jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_id        bigint;
    v_digest    text;
    v_outcome   text;
BEGIN
    IF jsonb_typeof(p) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'an action is a JSON object' USING ERRCODE = 'MC094';
    END IF;

    IF jsonb_typeof(v_evidence) <> 'array' THEN
        RAISE EXCEPTION 'evidence is a list' USING ERRCODE = 'MC094';
    END IF;

    CASE v_action
    WHEN 'assign' THEN
        PERFORM case_assign((p->>'case')::bigint, p->>'to', p->>'note');

    WHEN 'note' THEN
        PERFORM case_note((p->>'case')::bigint, p->>'note', v_evidence);

    WHEN 'propose' THEN
        v_id := case_propose((p->>'case')::bigint, p->>'proposal_action',
                             (p->>'credit')::bigint, p->>'amount',
                             p->>'note', v_evidence);

    WHEN 'propose_settle_done' THEN
        v_id := case_propose_settle_done((p->>'case')::bigint,
                                         (p->>'credit')::bigint,
                                         (p->>'ticket')::bigint,
                                         p->>'note', v_evidence);

    WHEN 'approve', 'reject', 'withdraw' THEN
        v_id := case_decide((p->>'proposal')::bigint, v_action,
                            p->>'note');

    WHEN 'resolve' THEN
        PERFORM case_resolve((p->>'case')::bigint, p->>'resolution',
                             p->>'note', v_evidence);

    -- a withdrawal: one person prepares (the digest of what they saw),
    -- another approves with that digest (042)
    WHEN 'withdrawal_prepare' THEN
        v_digest := withdrawal_prepare(p->>'withdrawal', p->>'note');

    WHEN 'withdrawal_approve' THEN
        PERFORM withdrawal_approve(p->>'withdrawal', p->>'digest',
                                   p->>'note');

    WHEN 'withdrawal_reject' THEN
        PERFORM withdrawal_reject(p->>'withdrawal', p->>'note');

    -- a stored event through ingest's rules again (039), recorded with
    -- who and why; its outcome is the answer
    WHEN 'event_replay' THEN
        SELECT r.replay_id, r.outcome INTO v_id, v_outcome
        FROM event_replay((p->>'event')::bigint, p->>'reason') r;

    -- a backfill from the provider's list, further back than its timer
    -- looks: asked for here, done by the next `mt5credit backfill` (059)
    WHEN 'backfill' THEN
        v_id := backfill_request_add(p->>'provider',
                                     (p->>'since')::timestamptz,
                                     p->>'reason');

    -- the kill switch (046)
    WHEN 'pause' THEN
        v_id := pause_set(p->>'scope', p->>'target', p->>'reason');

    WHEN 'resume' THEN
        v_id := pause_resume(p->>'scope', p->>'target', p->>'note');

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id, 'digest', v_digest,
                              'outcome', v_outcome);
END
$$;
