--
-- 033: two people settle an unknown credit as done, naming its deal; the
-- worker checks that deal in MT5 before anything is recorded.
--
-- 032 let two people settle an unknown credit as failed.  The other end of
-- a deal_conflict is a credit whose own deal exists but that no lookup can
-- settle: the reference appears twice (a dealer booked it again by hand),
-- so the resolver cannot tell which is ours.  A person names the ticket
-- (action settle_done, with evidence), another approves, and nothing is
-- recorded yet: the approved proposal is a request to the worker, which
-- fetches that one deal (deal/get) and records the credit done with it
-- only if the deal is a balance deal on the credit's login, with its
-- reference as comment and its exact signed amount, and no other credit
-- holds the ticket.  Otherwise the request is refused, the case goes back
-- to a person and the credit stays unknown.  A typo in a ticket never
-- becomes a recorded deal.
--
-- What is new:
--   settle_verification          one row per approved settle_done: the
--                                worker's verdict, append-only
--   work_item.settle_ticket      the ticket a worker must verify, if any;
--                                work_item_of() is re-declared here and
--                                this file holds its current definition
--   money_proposal_guard()       re-declared here (010's, the ticket is
--                                fixed too); this file holds its current
--                                definition
--   case_propose_settle_done()   the proposal (case_propose() of 023 has
--                                no ticket, and refuses the action)
--   case_decide()                re-declared here; this file holds its
--                                current definition (the branch marked 033)
--   settle_verified(), settle_refused()   the worker's two verdicts
--

ALTER TABLE mt5credit.money_proposal
    ADD COLUMN deal_ticket bigint CHECK (deal_ticket > 0),
    DROP CONSTRAINT money_proposal_action_check,
    ADD CONSTRAINT money_proposal_action_check
        CHECK (action IN ('requeue_credit', 'correcting_credit',
                          'correcting_debit', 'settle_failed',
                          'settle_done')),
    -- a ticket is settle_done's, and settle_done always names one
    ADD CONSTRAINT money_proposal_ticket_for_settle_done
        CHECK ((action = 'settle_done') = (deal_ticket IS NOT NULL)),
    DROP CONSTRAINT money_proposal_settle_has_evidence,
    ADD CONSTRAINT money_proposal_settle_has_evidence
        CHECK (action NOT IN ('settle_failed', 'settle_done')
               OR jsonb_array_length(evidence) > 0);

COMMENT ON COLUMN mt5credit.money_proposal.deal_ticket IS
    'settle_done only: the MT5 deal two people say is the credit''s own; '
    'recorded only after the worker verified it (settle_verification)';

-- the ticket is part of what was proposed: fixed once made, like the rest
CREATE OR REPLACE FUNCTION mt5credit.money_proposal_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.case_id, NEW.action, NEW.credit_id, NEW.amount_minor,
        NEW.currency, NEW.note, NEW.evidence, NEW.proposed_by,
        NEW.proposed_at, NEW.deal_ticket)
       IS DISTINCT FROM
       (OLD.case_id, OLD.action, OLD.credit_id, OLD.amount_minor,
        OLD.currency, OLD.note, OLD.evidence, OLD.proposed_by,
        OLD.proposed_at, OLD.deal_ticket)
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


CREATE TABLE mt5credit.settle_verification (
    proposal_id  bigint      PRIMARY KEY
                 REFERENCES mt5credit.money_proposal (id),
    credit_id    bigint      NOT NULL REFERENCES mt5credit.mt5_credit (id),
    deal_ticket  bigint      NOT NULL CHECK (deal_ticket > 0),
    outcome      text        NOT NULL CHECK (outcome IN ('verified',
                                                         'refused')),
    -- what MT5 said about the deal, and why it was refused
    detail       jsonb       NOT NULL CHECK (jsonb_typeof(detail) = 'object'),
    verified_by  text        NOT NULL,
    verified_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE mt5credit.settle_verification IS
    'The worker''s check of a ticket two people named for an unknown '
    'credit (settle_done): verified, the credit became done with it; '
    'refused, nothing was recorded and the case went back to a person.';

CREATE TRIGGER settle_verification_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.settle_verification
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

-- the worker's record on the case's trail
ALTER TABLE mt5credit.case_action
    DROP CONSTRAINT case_action_action_check,
    ADD CONSTRAINT case_action_action_check
        CHECK (action IN ('assign', 'note', 'propose', 'approve', 'reject',
                          'withdraw', 'resolve', 'verify'));


-- which approved settle_done is waiting for the worker, for a credit
CREATE FUNCTION mt5credit.settle_request(p_credit bigint)
RETURNS mt5credit.money_proposal
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT p.* FROM money_proposal p
    WHERE p.credit_id = p_credit AND p.action = 'settle_done'
      AND p.status = 'approved'
      AND NOT EXISTS (SELECT 1 FROM settle_verification v
                      WHERE v.proposal_id = p.id)
    ORDER BY p.id DESC
    LIMIT 1
$$;


-- 008 and 017's work item, and the ticket to verify
ALTER TYPE mt5credit.work_item ADD ATTRIBUTE settle_ticket bigint;

CREATE OR REPLACE FUNCTION mt5credit.work_item_of(p_id bigint)
RETURNS mt5credit.work_item
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.attempts, c.kind, c.direction, c.reference, c.mt5_server,
           c.mt5_login, c.amount_minor, c.currency, cur.minor_digits,
           o.client_id,
           EXISTS (SELECT 1 FROM client_account a
                   WHERE a.mt5_server = c.mt5_server
                     AND a.mt5_login = c.mt5_login
                     AND a.client_id = o.client_id
                     AND a.currency = c.currency
                     AND a.status = 'active'),
           c.created_at, c.claimed_at, c.lease_expires_at,
           (extract(epoch FROM c.lease_expires_at - clock_timestamp())
            * 1000)::bigint,
           CASE WHEN c.status = 'unknown'
                THEN (settle_request(c.id)).deal_ticket END
    FROM mt5_credit c
    CROSS JOIN LATERAL (
        SELECT d.client_id FROM deposit d WHERE d.id = c.deposit_id
        UNION ALL
        SELECT w.client_id FROM withdrawal w WHERE w.id = c.withdrawal_id
    ) o
    JOIN currency cur ON cur.code = c.currency
    WHERE c.id = p_id
$$;


--
-- case_propose_settle_done(): one person names the deal an unknown credit
-- made.  Nothing moves, and nothing moves on approval either until the
-- worker has checked the deal.
--
CREATE FUNCTION mt5credit.case_propose_settle_done(p_case bigint,
    p_credit_id bigint, p_ticket bigint, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_held  bigint;
    v_id    bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF v_cr.status <> 'unknown' THEN
        RAISE EXCEPTION 'credit % is %: only an unknown credit is settled',
                        v_cr.id, v_cr.status USING ERRCODE = 'MC048';
    END IF;
    IF p_ticket IS NULL OR p_ticket <= 0 THEN
        RAISE EXCEPTION 'settling credit % as done names its MT5 deal '
                        '(--ticket)', v_cr.id USING ERRCODE = 'MC048';
    END IF;
    IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
        RAISE EXCEPTION 'settling credit % as done needs evidence: where '
                        'the deal % was seen (--evidence)', v_cr.id, p_ticket
            USING ERRCODE = 'MC048';
    END IF;
    SELECT id INTO v_held FROM mt5_credit
    WHERE mt5_server = v_cr.mt5_server AND mt5_deal_ticket = p_ticket;
    IF FOUND THEN
        RAISE EXCEPTION 'deal % on % is credit %''s already', p_ticket,
                        v_cr.mt5_server, v_held USING ERRCODE = 'MC048';
    END IF;
    IF (settle_request(v_cr.id)).id IS NOT NULL THEN
        RAISE EXCEPTION 'credit % already waits for the worker to verify '
                        'deal %', v_cr.id, (settle_request(v_cr.id)).deal_ticket
            USING ERRCODE = 'MC048';
    END IF;

    INSERT INTO money_proposal (case_id, action, credit_id, deal_ticket,
                                note, evidence, proposed_by)
    VALUES (p_case, 'settle_done', v_cr.id, p_ticket, p_note,
            p_evidence, session_user)
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', 'settle_done', 'credit', v_cr.id,
                           'deal', p_ticket),
        p_note, p_evidence);
    RETURN v_id;
END
$$;


--
-- case_decide(): another person approves (the money moves, in this
-- transaction: the credit is re-queued or the correction is created for
-- the worker; a settle_done waits for the worker's check) or rejects; the
-- proposer may only withdraw.
--
CREATE OR REPLACE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text,
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

        IF p.action = 'settle_done' THEN
            -- 033: the worker checks the deal at its next round; nothing
            -- is recorded until it has
            UPDATE mt5_credit
            SET next_check_at = clock_timestamp()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'settle_failed' THEN
            -- 032: an unknown credit two people found has no deal
            UPDATE mt5_credit
            SET status = 'failed', next_check_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'requeue_credit' THEN
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
-- The worker's verdicts on the ticket it was asked to check.  Both read
-- the request again under the credit's row lock, so a verdict for a
-- request already answered, or a credit no longer unknown, records
-- nothing (false).
--
-- the request a verdict answers: the credit locked, still unknown at this
-- attempt, and waiting for this very ticket; NULL when any has moved on
CREATE FUNCTION mt5credit.settle_request_held(p_id bigint, p_attempt integer,
    p_ticket bigint)
RETURNS mt5credit.money_proposal
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  money_proposal;
BEGIN
    PERFORM 1 FROM mt5_credit
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    p := settle_request(p_id);
    RETURN CASE WHEN p.deal_ticket = p_ticket THEN p END;
END
$$;


CREATE FUNCTION mt5credit.settle_verified(p_id bigint, p_attempt integer,
    p_ticket bigint, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_cr    mt5_credit;
    p       money_proposal := settle_request_held(p_id, p_attempt, p_ticket);
    v_held  bigint;
BEGIN
    IF p.id IS NULL THEN
        RETURN false;
    END IF;
    SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p_id;

    -- held by another credit since it was proposed: refused, not recorded
    SELECT id INTO v_held FROM mt5_credit
    WHERE mt5_server = v_cr.mt5_server AND mt5_deal_ticket = p_ticket;
    IF FOUND THEN
        RETURN settle_refused(p_id, p_attempt, p_ticket, p_worker,
            coalesce(p_detail, '{}')
            || jsonb_build_object('refused', 'deal ' || p_ticket
                                  || ' is credit ' || v_held || '''s'));
    END IF;

    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
        || jsonb_build_object('proposal', p.id, 'case', p.case_id,
                              'proposed_by', p.proposed_by,
                              'approved_by', p.decided_by));
    UPDATE mt5_credit
    SET status = 'done', mt5_deal_ticket = p_ticket, next_check_at = NULL
    WHERE id = p_id AND status = 'unknown' AND attempts = p_attempt;

    INSERT INTO settle_verification (proposal_id, credit_id, deal_ticket,
                                     outcome, detail, verified_by)
    VALUES (p.id, p_id, p_ticket, 'verified', coalesce(p_detail, '{}'),
            p_worker);

    INSERT INTO case_action (case_id, action, actor, before, after, note)
    VALUES (p.case_id, 'verify', p_worker,
            jsonb_build_object('credit_status', 'unknown'),
            jsonb_build_object('credit_status', 'done', 'deal', p_ticket,
                               'proposal', p.id),
            'MT5 shows deal ' || p_ticket || ' as this credit''s: recorded');
    RETURN true;
END
$$;


CREATE FUNCTION mt5credit.settle_refused(p_id bigint, p_attempt integer,
    p_ticket bigint, p_worker text, p_detail jsonb)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  money_proposal := settle_request_held(p_id, p_attempt, p_ticket);
    c  "case";
BEGIN
    IF p.id IS NULL THEN
        RETURN false;
    END IF;

    INSERT INTO settle_verification (proposal_id, credit_id, deal_ticket,
                                     outcome, detail, verified_by)
    VALUES (p.id, p_id, p_ticket, 'refused', coalesce(p_detail, '{}'),
            p_worker);

    -- back to a person; the resolver's lookups (and alerts) resume
    SELECT * INTO c FROM "case" WHERE id = p.case_id FOR UPDATE;
    UPDATE "case"
    SET status = CASE WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id AND status = 'pending_resolution';

    INSERT INTO case_action (case_id, action, actor, before, after, note)
    VALUES (c.id, 'verify', p_worker,
            jsonb_build_object('status', c.status, 'proposal', p.id),
            jsonb_build_object('credit_status', 'unknown', 'deal', p_ticket,
                               'refused', coalesce(p_detail, '{}')),
            'deal ' || p_ticket || ' is not this credit''s: nothing '
            || 'recorded, the credit stays unknown');
    RETURN true;
END
$$;


REVOKE ALL ON FUNCTION
    mt5credit.settle_request(bigint),
    mt5credit.settle_request_held(bigint, integer, bigint),
    mt5credit.case_propose_settle_done(bigint, bigint, bigint, text, jsonb),
    mt5credit.settle_verified(bigint, integer, bigint, text, jsonb),
    mt5credit.settle_refused(bigint, integer, bigint, text, jsonb)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.case_propose_settle_done(bigint, bigint, bigint, text, jsonb)
    TO mt5credit_operator;

GRANT EXECUTE ON FUNCTION
    mt5credit.settle_verified(bigint, integer, bigint, text, jsonb),
    mt5credit.settle_refused(bigint, integer, bigint, text, jsonb)
    TO mt5credit_worker;
