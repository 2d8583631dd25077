--
-- 010: the case desk.
--
-- A case is work for a person (005).  Here it gets a lifecycle, an owner,
-- a priority, and a record of everything anyone did to it:
--
--   open --assign--> assigned --propose--> pending_resolution
--     \                 |   ^----reject/withdraw----/   |
--      \                v                               v
--       `-----------> resolved <----approve (executed)--'
--
-- Who acted is the database login (session_user): each person at the desk
-- has their own role, member of mt5credit_operator.  The program cannot
-- claim to be someone else, which is what makes the two-person rule real:
--
--   Anything that moves money (re-queue a failed credit, a correcting
--   credit or debit) is a proposal by one person and is carried out only
--   when a different person approves it, unchanged.  The database refuses
--   an approval by the proposer (a CHECK on the row and the function), and
--   the proposal's content cannot change after it was made (a trigger), so
--   what is approved is what was proposed.
--
-- Nothing is deleted: cases, actions and proposals are append-only apart
-- from the lifecycle columns, and each change of those is an action row
-- with the values before and after.


-- the amount at stake, for the priority
ALTER TABLE mt5credit.case
    ADD COLUMN amount_minor  bigint CHECK (amount_minor >= 0),
    ADD COLUMN currency      text   REFERENCES mt5credit.currency (code),
    ADD COLUMN updated_at    timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT case_amount_has_currency
        CHECK ((amount_minor IS NULL) = (currency IS NULL)),
    ADD CONSTRAINT case_resolution_known
        CHECK (resolution IS NULL
               OR resolution IN ('corrected', 'accepted', 'false_positive',
                                 'duplicate', 'provider_fixed',
                                 'written_off', 'not_money'));


--
-- Corrections: a credit or debit a person (two, in fact) decided on, to
-- fix what a case found.  A new kind of credit, made by the worker like
-- any other (claim, call, resolve), with its own reference "cor:<id>".
--
ALTER TABLE mt5credit.mt5_credit
    DROP CONSTRAINT mt5_credit_kind_check,
    ADD CONSTRAINT mt5_credit_kind_check
        CHECK (kind IN ('deposit', 'refund', 'chargeback', 'correction'));

-- the reference is generated from the kind; a correction gets its own
-- prefix (PostgreSQL 15 cannot change a generated expression in place)
ALTER TABLE mt5credit.mt5_credit DROP COLUMN reference;
ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN reference text NOT NULL UNIQUE
        GENERATED ALWAYS AS (
            CASE
            WHEN kind = 'deposit' THEN 'dep:'
            WHEN kind = 'refund' THEN 'rfd:'
            WHEN kind = 'correction' THEN 'cor:'
            WHEN direction = 'debit' THEN 'cbk:'
            ELSE 'cbr:'
            END || id) STORED;


CREATE TABLE mt5credit.case_action (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    case_id     bigint      NOT NULL REFERENCES mt5credit.case (id),
    action      text        NOT NULL
                CHECK (action IN ('assign', 'note', 'propose', 'approve',
                                  'reject', 'withdraw', 'resolve')),
    actor       text        NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    before      jsonb       NOT NULL DEFAULT '{}'
                CHECK (jsonb_typeof(before) = 'object'),
    after       jsonb       NOT NULL DEFAULT '{}'
                CHECK (jsonb_typeof(after) = 'object'),
    note        text        CHECK (length(note) <= 4000),
    evidence    jsonb       NOT NULL DEFAULT '[]'
                CHECK (jsonb_typeof(evidence) = 'array')
);

COMMENT ON TABLE mt5credit.case_action IS
    'Append-only: who did what to a case, when, the values before and '
    'after, and the evidence they gave.';

CREATE INDEX case_action_case_idx ON mt5credit.case_action (case_id, id);


CREATE TABLE mt5credit.money_proposal (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    case_id         bigint      NOT NULL REFERENCES mt5credit.case (id),
    action          text        NOT NULL
                    CHECK (action IN ('requeue_credit', 'correcting_credit',
                                      'correcting_debit')),
    credit_id       bigint      NOT NULL REFERENCES mt5credit.mt5_credit (id),
    -- corrections only: how much, in the credit's account currency
    amount_minor    bigint      CHECK (amount_minor > 0),
    currency        text        REFERENCES mt5credit.currency (code),
    note            text        NOT NULL CHECK (length(note) BETWEEN 1 AND 4000),
    evidence        jsonb       NOT NULL DEFAULT '[]'
                    CHECK (jsonb_typeof(evidence) = 'array'),
    proposed_by     text        NOT NULL,
    proposed_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    status          text        NOT NULL DEFAULT 'proposed'
                    CHECK (status IN ('proposed', 'approved', 'rejected',
                                      'withdrawn')),
    decided_by      text,
    decided_at      timestamptz,
    decision_note   text,
    -- what approval made: the correcting credit
    result_credit_id bigint     REFERENCES mt5credit.mt5_credit (id),
    CHECK ((action = 'requeue_credit')
           = (amount_minor IS NULL AND currency IS NULL)),
    CHECK ((status = 'proposed')
           = (decided_by IS NULL AND decided_at IS NULL)),
    -- the two-person rule: whoever decides is not whoever proposed
    -- (withdrawing one's own proposal moves no money)
    CONSTRAINT money_proposal_four_eyes
        CHECK (status IN ('proposed', 'withdrawn')
               OR decided_by <> proposed_by),
    CHECK (status <> 'withdrawn' OR decided_by = proposed_by),
    CHECK ((result_credit_id IS NOT NULL)
           = (status = 'approved' AND action <> 'requeue_credit'))
);

COMMENT ON TABLE mt5credit.money_proposal IS
    'Money-moving decisions on a case: proposed by one person, approved '
    'or rejected by another; nothing moves before approval.';

-- one open proposal per case at a time
CREATE UNIQUE INDEX money_proposal_one_open
    ON mt5credit.money_proposal (case_id) WHERE status = 'proposed';


-- a proposal's content is fixed once made; only its decision is written
CREATE FUNCTION mt5credit.money_proposal_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.case_id, NEW.action, NEW.credit_id, NEW.amount_minor,
        NEW.currency, NEW.note, NEW.evidence, NEW.proposed_by,
        NEW.proposed_at)
       IS DISTINCT FROM
       (OLD.case_id, OLD.action, OLD.credit_id, OLD.amount_minor,
        OLD.currency, OLD.note, OLD.evidence, OLD.proposed_by,
        OLD.proposed_at)
    THEN
        RAISE EXCEPTION 'proposal % cannot change after it was made: '
                        'withdraw it and propose again', OLD.id
            USING ERRCODE = 'MC040';
    END IF;
    IF OLD.status <> 'proposed' THEN
        RAISE EXCEPTION 'proposal % was already %', OLD.id, OLD.status
            USING ERRCODE = 'MC041';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER money_proposal_fixed
    BEFORE UPDATE ON mt5credit.money_proposal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.money_proposal_guard();

CREATE TRIGGER money_proposal_no_delete
    BEFORE DELETE ON mt5credit.money_proposal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER case_action_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.case_action
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


-- the lifecycle, as data the case trigger reads
CREATE TABLE mt5credit.case_transition (
    from_status  text NOT NULL,
    to_status    text NOT NULL,
    PRIMARY KEY (from_status, to_status)
);

INSERT INTO mt5credit.case_transition VALUES
    ('open', 'assigned'),
    ('open', 'pending_resolution'),
    ('open', 'resolved'),
    ('assigned', 'assigned'),
    ('assigned', 'pending_resolution'),
    ('assigned', 'resolved'),
    ('pending_resolution', 'assigned'),
    ('pending_resolution', 'open'),
    ('pending_resolution', 'resolved');

CREATE FUNCTION mt5credit.case_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF (NEW.kind, NEW.severity, NEW.dedupe_key, NEW.opened_at, NEW.opened_by,
        NEW.credit_id, NEW.deposit_id, NEW.webhook_event_id)
       IS DISTINCT FROM
       (OLD.kind, OLD.severity, OLD.dedupe_key, OLD.opened_at, OLD.opened_by,
        OLD.credit_id, OLD.deposit_id, OLD.webhook_event_id)
    THEN
        RAISE EXCEPTION 'case %: what it is about cannot change', OLD.id
            USING ERRCODE = 'MC042';
    END IF;
    IF NEW.status IS DISTINCT FROM OLD.status
       AND NOT EXISTS (SELECT 1 FROM case_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
    THEN
        RAISE EXCEPTION 'case %: % -> % is not a legal change', OLD.id,
                        OLD.status, NEW.status
            USING ERRCODE = 'MC043';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END
$$;

CREATE TRIGGER case_lifecycle
    BEFORE UPDATE ON mt5credit.case
    FOR EACH ROW EXECUTE FUNCTION mt5credit.case_guard();


--
-- open_case() again, now with the amount at stake.  Same contract as in
-- 005: one case per dedupe key, a new sighting merges its details in.
--
DROP FUNCTION mt5credit.open_case(text, text, text, jsonb, bigint, bigint,
                                  bigint);

CREATE FUNCTION mt5credit.open_case(p_kind text, p_severity text,
    p_dedupe_key text, p_details jsonb, p_credit_id bigint DEFAULT NULL,
    p_deposit_id bigint DEFAULT NULL, p_webhook_event_id bigint DEFAULT NULL,
    p_amount_minor bigint DEFAULT NULL, p_currency text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id      bigint;
    v_amount  bigint := abs(p_amount_minor);
    v_cur     text := CASE WHEN p_amount_minor IS NOT NULL
                           THEN p_currency END;
BEGIN
    IF v_amount IS NULL AND p_credit_id IS NOT NULL THEN
        SELECT amount_minor, currency INTO v_amount, v_cur
        FROM mt5_credit WHERE id = p_credit_id;
    END IF;

    INSERT INTO "case" (kind, severity, dedupe_key, details, credit_id,
                        deposit_id, webhook_event_id, opened_by,
                        amount_minor, currency)
    VALUES (p_kind, p_severity, p_dedupe_key,
            p_details || jsonb_build_object('sightings', 1),
            p_credit_id, p_deposit_id, p_webhook_event_id, credit_actor(),
            CASE WHEN v_cur IS NOT NULL THEN v_amount END, v_cur)
    ON CONFLICT (dedupe_key) DO UPDATE
        SET details = "case".details || EXCLUDED.details
                      || jsonb_build_object('sightings',
                             coalesce(("case".details->>'sightings')::int, 1)
                             + 1)
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;


--
-- Priority from amount and age (the larger wins), in the amount's major
-- units: P1 >= 100,000 or open >= 120 h; P2 >= 10,000 or >= 72 h;
-- P3 >= 1,000 or >= 24 h; P4 otherwise.  Computed when read: age moves.
--
CREATE FUNCTION mt5credit.case_priority(p_amount_minor bigint,
    p_currency text, p_opened_at timestamptz, p_now timestamptz)
RETURNS text
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE
        WHEN major >= 100000 OR age >= interval '120 hours' THEN 'P1'
        WHEN major >= 10000 OR age >= interval '72 hours' THEN 'P2'
        WHEN major >= 1000 OR age >= interval '24 hours' THEN 'P3'
        ELSE 'P4' END
    FROM (SELECT coalesce(p_amount_minor::numeric
                          / 10 ^ (SELECT minor_digits FROM currency
                                  WHERE code = p_currency), 0) AS major,
                 p_now - p_opened_at AS age) x
$$;


-- the desk's helpers: who acts, and the case locked for the change
CREATE FUNCTION mt5credit.desk_case(p_case bigint)
RETURNS mt5credit.case
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c  "case";
BEGIN
    SELECT * INTO c FROM "case" WHERE id = p_case FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no case %', p_case USING ERRCODE = 'MC044';
    END IF;
    RETURN c;
END
$$;

CREATE FUNCTION mt5credit.desk_record(p_case bigint, p_action text,
    p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE sql
SET search_path = mt5credit, pg_temp
AS $$
    INSERT INTO case_action (case_id, action, actor, before, after, note,
                             evidence)
    VALUES (p_case, p_action, session_user, coalesce(p_before, '{}'),
            coalesce(p_after, '{}'), p_note, coalesce(p_evidence, '[]'))
    RETURNING id
$$;

CREATE FUNCTION mt5credit.desk_require_open(c mt5credit.case)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF c.status = 'resolved' THEN
        RAISE EXCEPTION 'case % is resolved', c.id USING ERRCODE = 'MC045';
    END IF;
END
$$;


-- a proposal waiting for its decision is decided first, not gone around
CREATE FUNCTION mt5credit.desk_require_no_open_proposal(p_case bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM money_proposal
               WHERE case_id = p_case AND status = 'proposed')
    THEN
        RAISE EXCEPTION 'case % has a proposal waiting for a decision',
                        p_case USING ERRCODE = 'MC046';
    END IF;
END
$$;


CREATE FUNCTION mt5credit.case_assign(p_case bigint, p_to text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    PERFORM desk_require_open(c);
    PERFORM desk_require_no_open_proposal(p_case);
    IF p_to IS NULL OR p_to !~ '^[A-Za-z0-9_.@-]{1,200}$' THEN
        RAISE EXCEPTION 'assign to whom? "%" is not a user name',
                        coalesce(p_to, '') USING ERRCODE = 'MC047';
    END IF;
    UPDATE "case" SET status = 'assigned', assigned_to = p_to
    WHERE id = p_case AND status = c.status;
    PERFORM desk_record(p_case, 'assign',
        jsonb_build_object('status', c.status, 'assigned_to', c.assigned_to),
        jsonb_build_object('status', 'assigned', 'assigned_to', p_to),
        p_note, NULL);
END
$$;


CREATE FUNCTION mt5credit.case_note(p_case bigint, p_note text,
    p_evidence jsonb)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    IF coalesce(p_note, '') = '' THEN
        RAISE EXCEPTION 'a note needs text' USING ERRCODE = 'MC047';
    END IF;
    PERFORM desk_record(p_case, 'note', NULL, NULL, p_note, p_evidence);
END
$$;


--
-- case_resolve(): closes a case with a resolution, a note and evidence.
-- Moves no money; a case with a proposal waiting is decided first.
--
CREATE FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text,
    p_note text, p_evidence jsonb)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    PERFORM desk_require_open(c);
    PERFORM desk_require_no_open_proposal(p_case);
    IF coalesce(p_note, '') = '' THEN
        RAISE EXCEPTION 'a resolution needs a note saying why'
            USING ERRCODE = 'MC047';
    END IF;
    UPDATE "case"
    SET status = 'resolved', resolution = p_resolution,
        resolved_by = session_user, resolved_at = now()
    WHERE id = p_case AND status = c.status;
    PERFORM desk_record(p_case, 'resolve',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'resolved', 'resolution', p_resolution),
        p_note, p_evidence);
END
$$;


--
-- case_propose(): one person proposes moving money.  Nothing moves yet.
--   requeue_credit     a failed credit back to pending (the worker makes
--                      it), for when the cause of the failure is fixed;
--   correcting_credit  a new credit of amount to the credit's login;
--   correcting_debit   a new debit of amount from it.
--
CREATE FUNCTION mt5credit.case_propose(p_case bigint, p_action text,
    p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_id    bigint;
    v_num   numeric;
    v_amount_minor  bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'requeue_credit' AND v_cr.status <> 'failed' THEN
        RAISE EXCEPTION 'credit % is %: only a failed credit can be '
                        're-queued', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action <> 'requeue_credit' THEN
        -- major units, exactly: 12.345 USD is refused, not rounded
        IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$'
        THEN
            RAISE EXCEPTION 'a correction needs an amount like 12.50, '
                            'not "%"', coalesce(p_amount, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_num := p_amount::numeric
                 * 10 ^ (SELECT minor_digits FROM currency
                         WHERE code = v_cr.currency);
        IF v_num <> trunc(v_num) OR v_num <= 0 THEN
            RAISE EXCEPTION '% is not a positive amount in whole minor '
                            'units of %', p_amount, v_cr.currency
                USING ERRCODE = 'MC048';
        END IF;
        v_amount_minor := v_num::bigint;
    END IF;

    INSERT INTO money_proposal (case_id, action, credit_id, amount_minor,
                                currency, note, evidence, proposed_by)
    VALUES (p_case, p_action, v_cr.id,
            v_amount_minor,
            CASE WHEN p_action <> 'requeue_credit' THEN v_cr.currency END,
            p_note, coalesce(p_evidence, '[]'), session_user)
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'credit', v_cr.id,
                           'amount_minor', v_amount_minor,
                           'currency', v_cr.currency),
        p_note, p_evidence);
    RETURN v_id;
END
$$;


--
-- case_decide(): another person approves (the money moves, in this
-- transaction: the credit is re-queued or the correction is created for
-- the worker) or rejects; the proposer may only withdraw.
--
CREATE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p       money_proposal;
    c       "case";
    v_cr    mt5_credit;
    v_new   bigint;
    v_rows  integer;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    c := desk_case(p.case_id);
    IF p.status <> 'proposed' THEN
        RAISE EXCEPTION 'proposal % was already %', p.id, p.status
            USING ERRCODE = 'MC041';
    END IF;
    IF p_decision NOT IN ('approve', 'reject', 'withdraw') THEN
        RAISE EXCEPTION 'decide how? "%"', p_decision USING ERRCODE = 'MC047';
    END IF;
    IF p_decision = 'withdraw' AND p.proposed_by <> session_user THEN
        RAISE EXCEPTION 'only % may withdraw proposal %', p.proposed_by, p.id
            USING ERRCODE = 'MC049';
    END IF;
    IF p_decision <> 'withdraw' AND p.proposed_by = session_user THEN
        RAISE EXCEPTION 'two-person rule: % proposed this and cannot %s it; '
                        'another person must decide', session_user,
                        p_decision
            USING ERRCODE = 'MC049';
    END IF;

    IF p_decision = 'approve' THEN
        SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p.credit_id
        FOR UPDATE;
        PERFORM set_config('mt5credit.actor', session_user, true);
        PERFORM set_config('mt5credit.detail',
            jsonb_build_object('case', c.id, 'proposal', p.id,
                               'proposed_by', p.proposed_by,
                               'approved_by', session_user)::text, true);

        IF p.action = 'requeue_credit' THEN
            UPDATE mt5_credit
            SET status = 'pending', claimed_at = NULL, claimed_by = NULL,
                lease_expires_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'failed';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer failed: '
                                'nothing re-queued', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSE
            INSERT INTO mt5_credit (kind, direction, original_credit_id,
                                    deposit_id, provider, provider_payment_id,
                                    mt5_server, mt5_login, amount_minor,
                                    currency, paid_amount_minor,
                                    paid_currency)
            VALUES ('correction',
                    CASE p.action WHEN 'correcting_credit' THEN 'credit'
                                  ELSE 'debit' END,
                    v_cr.id, v_cr.deposit_id, v_cr.provider,
                    'correction:' || p.id, v_cr.mt5_server, v_cr.mt5_login,
                    p.amount_minor, p.currency, p.amount_minor, p.currency)
            RETURNING id INTO v_new;
        END IF;
    END IF;

    UPDATE money_proposal
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = session_user, decided_at = clock_timestamp(),
        decision_note = p_note, result_credit_id = v_new
    WHERE id = p.id AND status = 'proposed';

    -- approved: the case waits for the worker's outcome and a person's
    -- resolution; rejected or withdrawn: back to whoever had it
    UPDATE "case"
    SET status = CASE WHEN p_decision = 'approve' THEN 'pending_resolution'
                      WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id;

    PERFORM desk_record(c.id, p_decision,
        jsonb_build_object('status', c.status, 'proposal', p.id,
                           'credit_status', v_cr.status),
        jsonb_build_object('proposal_status', p_decision,
                           'credit', p.credit_id,
                           'correction_credit', v_new),
        p_note, NULL);
    RETURN coalesce(v_new, p.credit_id);
END
$$;


--
-- What a person reads.  case_list: one line per case, filtered; the
-- priority is computed now.  case_show: everything known about one case.
--
CREATE FUNCTION mt5credit.case_list(p_kind text, p_status text,
    p_min_age interval, p_limit integer)
RETURNS TABLE (id bigint, priority text, severity text, kind text,
               status text, assigned_to text, amount_minor bigint,
               currency text, opened_at timestamptz, age interval,
               credit_id bigint, summary text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id,
           case_priority(c.amount_minor, c.currency, c.opened_at, now()),
           c.severity, c.kind, c.status, c.assigned_to, c.amount_minor,
           c.currency, c.opened_at, date_trunc('second', now() - c.opened_at),
           c.credit_id,
           coalesce(c.details->'credit'->>'reference',
                    c.details->'settlement'->>'row_id',
                    c.details->'deals'->0->>'comment', '')
    FROM "case" c
    WHERE (p_kind IS NULL OR c.kind = p_kind)
      AND (CASE WHEN p_status IS NULL THEN c.status <> 'resolved'
                WHEN p_status = 'all' THEN true
                ELSE c.status = p_status END)
      AND (p_min_age IS NULL OR now() - c.opened_at >= p_min_age)
    ORDER BY 2, c.opened_at, c.id
    LIMIT coalesce(p_limit, 1000)
$$;


CREATE FUNCTION mt5credit.case_show(p_case bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c     "case";
    v_cr  bigint;
BEGIN
    SELECT * INTO c FROM "case" WHERE id = p_case;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no case %', p_case USING ERRCODE = 'MC044';
    END IF;
    v_cr := c.credit_id;

    RETURN jsonb_build_object(
        'case', to_jsonb(c) || jsonb_build_object('priority',
                    case_priority(c.amount_minor, c.currency, c.opened_at,
                                  now())),
        'actions', coalesce((SELECT jsonb_agg(to_jsonb(a) ORDER BY a.id)
                             FROM case_action a WHERE a.case_id = c.id),
                            '[]'),
        'proposals', coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.id)
                               FROM money_proposal p
                               WHERE p.case_id = c.id), '[]'),
        'credit', (SELECT to_jsonb(x) FROM mt5_credit x WHERE x.id = v_cr),
        'credit_history',
            coalesce((SELECT jsonb_agg(to_jsonb(h) ORDER BY h.id)
                      FROM credit_history h WHERE h.credit_id = v_cr), '[]'),
        'related_credits',
            coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'id', x.id, 'reference', x.reference,
                                 'kind', x.kind, 'status', x.status,
                                 'amount_minor', x.amount_minor,
                                 'currency', x.currency) ORDER BY x.id)
                      FROM mt5_credit x
                      WHERE x.original_credit_id = v_cr), '[]'),
        'deposit', (SELECT to_jsonb(d) FROM deposit d
                    WHERE d.id = coalesce(c.deposit_id,
                        (SELECT deposit_id FROM mt5_credit WHERE id = v_cr))),
        'events',
            coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'id', e.id, 'provider', e.provider,
                                 'event_id', e.provider_event_id,
                                 'type', e.event_type,
                                 'received_at', e.received_at,
                                 'disposition', e.disposition,
                                 'detail', e.detail,
                                 'body', convert_from(e.raw_body, 'UTF8'))
                             ORDER BY e.id)
                      FROM webhook_event e
                      WHERE e.credit_id = v_cr OR e.id = c.webhook_event_id),
                     '[]'),
        'recon_items',
            coalesce((SELECT jsonb_agg(to_jsonb(i) ORDER BY i.id)
                      FROM recon_item i WHERE i.case_id = c.id), '[]'));
END
$$;


GRANT EXECUTE ON FUNCTION
    mt5credit.case_list(text, text, interval, integer),
    mt5credit.case_show(bigint),
    mt5credit.case_assign(bigint, text, text),
    mt5credit.case_note(bigint, text, jsonb),
    mt5credit.case_resolve(bigint, text, text, jsonb),
    mt5credit.case_propose(bigint, text, bigint, text, text, jsonb),
    mt5credit.case_decide(bigint, text, text)
    TO mt5credit_operator;

GRANT EXECUTE ON FUNCTION mt5credit.case_list(text, text, interval, integer)
    TO mt5credit_reader;
