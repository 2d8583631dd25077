--
-- 053: who acts is a person, at the CLI and through the console alike.
--
-- Every function that records who did something, or keeps a person from
-- approving their own proposal, took the actor from session_user: the
-- login.  The console (052) logs in as its own role and acts for a person
-- by SET LOCAL ROLE to that person's role; there session_user is the
-- console's login, and current_user inside a SECURITY DEFINER function
-- is the owner.  What SET ROLE set is still the setting "role", inside a
-- SECURITY DEFINER function too.  person() is the actor:
--   - no SET ROLE (a person's own login at the CLI, a program):
--     session_user, as before;
--   - SET ROLE r: r, which must be a person (a member of
--     mt5credit_person).  A console login is a member of its persons'
--     roles, and so of their groups: SET ROLE mt5credit_operator would be
--     allowed, and is refused here, not recorded as an anonymous actor
--     that could approve what a person proposed.
--
-- Re-declared with person() for session_user, each otherwise unchanged;
-- this file holds their current definitions:
--   credit_actor()             (004)
--   case_resolve()             (010)
--   desk_record()              (010)
--   withdrawal_reject()        (016)
--   case_propose()             (023)
--   query_answered()           (028)
--   case_decide()              (033)
--   case_propose_settle_done() (033)
--   event_replay_as()          (039)
--   withdrawal_approve()       (042)
--   withdrawal_prepare()       (042)
--   pause_resume()             (046)
--   pause_set()                (046)
-- and the defaults of recon_run.started_by, deployment.set_by and
-- webhook_event_replay.replayed_by.
--

CREATE FUNCTION mt5credit.person()
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_role  text := current_setting('role');
BEGIN
    IF v_role = 'none' THEN
        RETURN session_user;
    END IF;

    IF v_role = 'mt5credit_person'
       OR NOT pg_has_role(v_role, 'mt5credit_person', 'MEMBER')
    THEN
        RAISE EXCEPTION 'acting as "%": a role set by SET ROLE acts only '
                        'if it is a person (a member of mt5credit_person)',
                        v_role
            USING ERRCODE = 'MC093';
    END IF;

    RETURN v_role;
END
$$;

REVOKE ALL ON FUNCTION mt5credit.person() FROM PUBLIC;

-- 004's credit_actor()
CREATE OR REPLACE FUNCTION mt5credit.credit_actor()
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(nullif(current_setting('mt5credit.actor', true), ''),
                    mt5credit.person()::text)
$$;


-- 010's case_resolve()
CREATE OR REPLACE FUNCTION mt5credit.case_resolve(p_case bigint, p_resolution text,
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
        resolved_by = mt5credit.person(), resolved_at = now()
    WHERE id = p_case AND status = c.status;
    PERFORM desk_record(p_case, 'resolve',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'resolved', 'resolution', p_resolution),
        p_note, p_evidence);
END
$$;


-- 010's desk_record()
CREATE OR REPLACE FUNCTION mt5credit.desk_record(p_case bigint, p_action text,
    p_before jsonb, p_after jsonb, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE sql
SET search_path = mt5credit, pg_temp
AS $$
    INSERT INTO case_action (case_id, action, actor, before, after, note,
                             evidence)
    VALUES (p_case, p_action, mt5credit.person(), coalesce(p_before, '{}'),
            coalesce(p_after, '{}'), p_note, coalesce(p_evidence, '[]'))
    RETURNING id
$$;


-- 016's withdrawal_reject()
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_reject(p_reference text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    UPDATE withdrawal
    SET status = 'rejected', decided_by = mt5credit.person(), note = p_note
    WHERE reference = p_reference AND status IN ('requested', 'prepared');
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % is not open', p_reference
            USING ERRCODE = 'MC073';
    END IF;
END
$$;


-- 023's case_propose()
CREATE OR REPLACE FUNCTION mt5credit.case_propose(p_case bigint, p_action text,
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
    IF p_action = 'settle_failed' THEN
        -- 032: an unknown credit settled as failed, on evidence
        IF v_cr.status <> 'unknown' THEN
            RAISE EXCEPTION 'credit % is %: only an unknown credit is '
                            'settled', v_cr.id, v_cr.status
                USING ERRCODE = 'MC048';
        END IF;
        IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
            RAISE EXCEPTION 'settling credit % as failed needs evidence that '
                            'it has no deal (--evidence)', v_cr.id
                USING ERRCODE = 'MC048';
        END IF;
    END IF;
    IF p_action = 'requeue_credit' AND v_cr.status <> 'failed' THEN
        RAISE EXCEPTION 'credit % is %: only a failed credit can be '
                        're-queued', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    -- a correction is claimed only once the credit it adjusts is done:
    -- proposed for one that is not, it would wait for ever (023)
    IF p_action IN ('correcting_credit', 'correcting_debit')
       AND v_cr.status <> 'done'
    THEN
        RAISE EXCEPTION 'credit % is %: a correction adjusts a done credit; '
                        'settle this one first', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action IN ('correcting_credit', 'correcting_debit') THEN
        -- major units, exactly: 12.345 USD is refused, not rounded
        IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$'
        THEN
            RAISE EXCEPTION 'a correction needs an amount like 12.50, '
                            'not "%"', coalesce(p_amount, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_num := major_to_minor(p_amount::numeric, v_cr.currency);
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
            CASE WHEN p_action IN ('correcting_credit', 'correcting_debit')
                 THEN v_cr.currency END,
            p_note, coalesce(p_evidence, '[]'), mt5credit.person())
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


-- 028's query_answered()
CREATE OR REPLACE FUNCTION mt5credit.query_answered(p_provider text,
    p_deposit bigint, p_type text, p_answer bytea)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d        deposit;
    o        jsonb;
    v_got    jsonb;
    v_body   bytea;
    v_out    text;
BEGIN
    SELECT * INTO STRICT d FROM deposit WHERE id = p_deposit;
    IF d.provider <> p_provider THEN
        RAISE EXCEPTION 'deposit % is not a % deposit', d.reference,
                        p_provider USING ERRCODE = 'MC061';
    END IF;
    IF p_type IS NULL THEN
        RETURN 'open';
    END IF;

    -- 028: the object asked for, about this deposit, for its money
    BEGIN
        o := convert_from(p_answer, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        o := NULL;
    END;

    v_got := jsonb_build_object(
        'id', o->>'id',
        'reference', coalesce(o->>'client_reference_id',
                              o #>> '{metadata,deposit_id}'),
        'amount_minor', coalesce(o->>'amount_total', o->>'amount_received',
                                 o->>'amount'),
        'currency', upper(o->>'currency'));

    IF jsonb_typeof(o) IS DISTINCT FROM 'object'
       OR d.provider_session_id IS NULL
       OR v_got->>'id' IS DISTINCT FROM d.provider_session_id
       OR v_got->>'reference' IS DISTINCT FROM d.reference
       OR v_got->>'amount_minor' IS DISTINCT FROM d.amount_minor::text
       OR v_got->>'currency' IS DISTINCT FROM d.currency
    THEN
        PERFORM open_case('query_answer_mismatch', 'critical',
                          'query_answer_mismatch:deposit:' || d.id || ':'
                              || encode(sha256(p_answer), 'hex'),
                          jsonb_build_object(
                              'got', v_got,
                              'expected', jsonb_build_object(
                                  'id', d.provider_session_id,
                                  'reference', d.reference,
                                  'amount_minor', d.amount_minor::text,
                                  'currency', d.currency),
                              'answer_sha256',
                                  encode(sha256(p_answer), 'hex'),
                              'caller', mt5credit.person()),
                          NULL, d.id, NULL, d.amount_minor, d.currency);
        RETURN 'refused';
    END IF;

    -- the provider's bytes, verbatim, inside an event envelope of ours
    v_body := convert_to('{"id": "query:' || d.provider_session_id || ':'
                         || left(encode(sha256(p_answer), 'hex'), 32)
                         || '", "type": "' || p_type
                         || '", "data": {"object": ', 'UTF8')
              || p_answer || convert_to('}}', 'UTF8');

    SELECT outcome INTO v_out
    FROM ingest(p_provider, NULL, v_body, 'api', NULL);
    RETURN v_out;
END
$$;


-- 033's case_decide()
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
    IF p_decision = 'withdraw' AND p.proposed_by <> mt5credit.person() THEN
        RAISE EXCEPTION 'only % may withdraw proposal %', p.proposed_by, p.id
            USING ERRCODE = 'MC049';
    END IF;
    IF p_decision <> 'withdraw' AND p.proposed_by = mt5credit.person() THEN
        RAISE EXCEPTION 'two-person rule: % proposed this and cannot %s it; '
                        'another person must decide', mt5credit.person(),
                        p_decision
            USING ERRCODE = 'MC049';
    END IF;

    IF p_decision = 'approve' THEN
        SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p.credit_id
        FOR UPDATE;
        PERFORM set_config('mt5credit.actor', mt5credit.person(), true);
        PERFORM set_config('mt5credit.detail',
            jsonb_build_object('case', c.id, 'proposal', p.id,
                               'proposed_by', p.proposed_by,
                               'approved_by', mt5credit.person())::text, true);

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
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
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


-- 033's case_propose_settle_done()
CREATE OR REPLACE FUNCTION mt5credit.case_propose_settle_done(p_case bigint,
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
            p_evidence, mt5credit.person())
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


-- 039's event_replay_as()
CREATE OR REPLACE FUNCTION mt5credit.event_replay_as(p_event bigint, p_reason text,
    p_run bigint)
RETURNS mt5credit.webhook_event_replay
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    e  webhook_event;
    x  record;
    r  webhook_event_replay;
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION 'a replay needs its reason' USING ERRCODE = 'MC040';
    END IF;

    SELECT * INTO e FROM webhook_event WHERE id = p_event FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no stored event %', p_event
            USING ERRCODE = 'MC041';
    END IF;

    PERFORM set_config('mt5credit.actor',
                       left('replay:' || mt5credit.person() || ':' || e.provider
                            || ':' || e.provider_event_id, 200), true);

    -- the bytes were JSON when they were stored (ingest() parsed them)
    x := ingest_facts(e.provider, e.event_type,
                      convert_from(e.raw_body, 'UTF8')::jsonb, e.id,
                      e.provider_event_id);

    INSERT INTO webhook_event_replay (event_id, reason, recon_run_id,
                                      outcome, credit_id, detail)
    VALUES (e.id, p_reason, p_run, x.disposition, x.credit_id, x.detail)
    RETURNING * INTO r;

    RETURN r;
END
$$;


-- 042's withdrawal_approve()
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_approve(p_reference text,
    p_digest text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    v_rows  integer;
    v_now   text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    IF NOT FOUND OR w.status <> 'prepared' THEN
        RAISE EXCEPTION 'withdrawal % is not prepared for approval',
                        p_reference USING ERRCODE = 'MC073';
    END IF;
    IF w.prepared_by = mt5credit.person() THEN
        RAISE EXCEPTION 'maker-checker: % prepared withdrawal % and cannot '
                        'approve it; another person must', mt5credit.person(),
                        p_reference USING ERRCODE = 'MC074';
    END IF;
    IF w.plan_digest IS NULL THEN
        RAISE EXCEPTION 'withdrawal % was prepared before withdrawals had '
                        'a plan: prepare it again, then approve',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
    IF p_digest IS DISTINCT FROM w.prepared_digest
       OR w.prepared_digest IS DISTINCT FROM
          md5(w.request_digest || '|' || w.plan_digest)
    THEN
        RAISE EXCEPTION 'withdrawal % is not the request that was '
                        'prepared and shown: nothing approved', p_reference
            USING ERRCODE = 'MC075';
    END IF;

    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    v_now := withdrawal_plan_digest(w.id);

    IF v_now IS DISTINCT FROM w.plan_digest THEN
        RAISE EXCEPTION 'withdrawal %: its plan changed since it was '
                        'prepared (a refund, a chargeback or another '
                        'withdrawal came in): nothing approved; prepare it '
                        'again', p_reference
            USING ERRCODE = 'MC076';
    END IF;

    UPDATE withdrawal
    SET status = 'approved', approved_by = mt5credit.person(),
        approved_at = clock_timestamp(), approved_digest = p_digest,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = 'prepared'
      AND prepared_digest = p_digest;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'withdrawal % changed under the approval',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
END
$$;


-- 042's withdrawal_prepare()
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_prepare(p_reference text,
    p_note text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    v_plan  integer;
    v_pd    text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    -- (one prepared before plans existed is prepared again, with its plan)
    IF NOT FOUND OR NOT (w.status = 'requested'
                         OR (w.status = 'prepared' AND w.plan_no IS NULL))
    THEN
        RAISE EXCEPTION 'withdrawal % is not waiting to be prepared',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    -- one plan at a time per account: two withdrawals of one login are
    -- planned (and approved) one after the other
    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    SELECT coalesce(max(plan_no), 0) + 1 INTO v_plan
    FROM withdrawal_leg WHERE withdrawal_id = w.id;

    INSERT INTO withdrawal_leg (withdrawal_id, plan_no, leg, kind, provider,
                                credit_id, payment_key, amount_minor,
                                currency, account_amount_minor, fx_rate)
    SELECT w.id, v_plan, p.leg, p.kind, p.provider, p.credit_id,
           p.payment_key, p.amount_minor, p.currency,
           p.account_amount_minor, p.fx_rate
    FROM withdrawal_plan(w.id) p;

    -- the same plan as the legs just stored: one transaction, one now()
    v_pd := withdrawal_plan_digest(w.id);

    UPDATE withdrawal
    SET status = 'prepared', prepared_by = mt5credit.person(),
        prepared_at = clock_timestamp(),
        prepared_digest = md5(request_digest || '|' || v_pd),
        plan_no = v_plan, plan_digest = v_pd,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = w.status
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % changed under the preparation',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    RETURN w.prepared_digest;
END
$$;


-- 046's pause_resume()
CREATE OR REPLACE FUNCTION mt5credit.pause_resume(p_scope text, p_target text,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    UPDATE pause
    SET resumed_by = mt5credit.person(), resumed_at = clock_timestamp(),
        resume_note = nullif(btrim(p_note), '')
    WHERE scope = p_scope AND target = p_target AND resumed_at IS NULL
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION '% % is not paused', p_scope, p_target
            USING ERRCODE = 'MC103';
    END IF;
    RETURN v_id;
END
$$;


-- 046's pause_set()
CREATE OR REPLACE FUNCTION mt5credit.pause_set(p_scope text, p_target text,
    p_reason text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
    v     record;
BEGIN
    IF p_scope IS NULL OR p_scope NOT IN ('server', 'provider', 'kind') THEN
        RAISE EXCEPTION 'pause what? scope is server, provider or kind, '
                        'not "%"', p_scope USING ERRCODE = 'MC101';
    END IF;
    IF p_reason IS NULL OR length(btrim(p_reason)) < 3 THEN
        RAISE EXCEPTION 'a pause needs its reason: why crediting stops'
            USING ERRCODE = 'MC101';
    END IF;

    SELECT paused_by, paused_at, reason INTO v
    FROM pause
    WHERE scope = p_scope AND target = p_target AND resumed_at IS NULL;
    IF FOUND THEN
        RAISE EXCEPTION '% % is already paused, since % by %: %', p_scope,
            p_target, v.paused_at, v.paused_by, v.reason
            USING ERRCODE = 'MC102';
    END IF;

    BEGIN
        INSERT INTO pause (scope, target, reason, paused_by)
        VALUES (p_scope, p_target, p_reason, mt5credit.person())
        RETURNING id INTO v_id;
    EXCEPTION
        WHEN unique_violation THEN
            RAISE EXCEPTION '% % was paused by someone else just now',
                p_scope, p_target USING ERRCODE = 'MC102';
        WHEN check_violation THEN
            RAISE EXCEPTION 'no % is named "%": %', p_scope, p_target,
                CASE p_scope
                    WHEN 'kind' THEN 'deposit, refund, chargeback, '
                                     'correction or withdrawal'
                    WHEN 'provider' THEN 'a provider''s name as in its '
                                         'webhooks (stripe)'
                    ELSE 'an MT5 server''s name as configured (live1)'
                END USING ERRCODE = 'MC101';
    END;
    RETURN v_id;
END
$$;


ALTER TABLE mt5credit.recon_run
    ALTER COLUMN started_by SET DEFAULT mt5credit.person();
ALTER TABLE mt5credit.deployment
    ALTER COLUMN set_by SET DEFAULT mt5credit.person();
ALTER TABLE mt5credit.webhook_event_replay
    ALTER COLUMN replayed_by SET DEFAULT mt5credit.person();
