--
-- 032: two people settle an unknown credit that no lookup will.
--
-- A credit stays unknown while MT5 gives no answer that settles it: a
-- deal_conflict (the reference twice, or with another amount) never
-- does, and the resolver looked it up and alerted again every
-- resolve_retry, for ever.  Now a person may propose settle_failed, with
-- evidence that the credit's own deal does not exist (what was checked in
-- MT5, and how), and another person approves it: the credit becomes
-- failed, is never picked or alerted again, and whatever MT5 does hold is
-- put right by a correction like any other.  Settling as done, with a
-- ticket the worker verifies in MT5, is not here yet.
--
-- case_propose() (023) accepts the action for an unknown credit, with at
-- least one piece of evidence; case_decide() is re-declared here, and this
-- file holds its current definition (what is new: the branch marked 032).
--

ALTER TABLE mt5credit.money_proposal
    DROP CONSTRAINT money_proposal_action_check,
    ADD CONSTRAINT money_proposal_action_check
        CHECK (action IN ('requeue_credit', 'correcting_credit',
                          'correcting_debit', 'settle_failed')),
    -- an amount is a correction's, and only a correction's
    DROP CONSTRAINT money_proposal_check,
    ADD CONSTRAINT money_proposal_amount_for_corrections
        CHECK ((action IN ('correcting_credit', 'correcting_debit'))
               = (amount_minor IS NOT NULL AND currency IS NOT NULL)),
    DROP CONSTRAINT money_proposal_check3,
    ADD CONSTRAINT money_proposal_result_for_corrections
        CHECK ((result_credit_id IS NOT NULL)
               = (status = 'approved'
                  AND action IN ('correcting_credit', 'correcting_debit'))),
    -- "no deal" is a claim a person backs with evidence
    ADD CONSTRAINT money_proposal_settle_has_evidence
        CHECK (action <> 'settle_failed' OR jsonb_array_length(evidence) > 0);


--
-- case_decide(): another person approves (the money moves, in this
-- transaction: the credit is re-queued or the correction is created for
-- the worker) or rejects; the proposer may only withdraw.
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

        IF p.action = 'settle_failed' THEN
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
