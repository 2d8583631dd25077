--
-- 026: a reinstatement waits for the chargeback debit it gives back.
--
-- A won dispute (charge.dispute.funds_reinstated) becomes a chargeback
-- credit, cbr:<id>, linked like every reversal to the deposit's credit.
-- claim_credit() (008) let a reversal go once that deposit credit was
-- done, so a reinstatement could be credited while its chargeback debit
-- was still pending, or after it had failed: deposit +100, the client
-- withdraws, the chargeback debit fails for want of funds, the dispute is
-- won, and +100 is credited again that was never taken back.
--
--   - claim_credit() is re-declared: a reinstatement is claimed only when
--     every chargeback debit of the same payment is done.  This file holds
--     its current definition; what is new is the condition marked 026.
--   - A reinstatement whose chargeback debit failed is a case, not a
--     credit: reinstatement_after_failed_debit (high), opened when either
--     of the two comes second.  The reinstatement stays pending and is
--     never claimed while the debit is failed; if a person re-queues the
--     debit and it is made, the reinstatement follows.
--

--
-- Claims the oldest pending credit of the given MT5 servers: one atomic
-- statement, the pick in a CTE with FOR UPDATE SKIP LOCKED (a fence: the
-- planner cannot re-run the LIMIT and claim more), so concurrent workers
-- never claim the same row and never wait for each other.  A refund or
-- chargeback waits until the credit it reverses is done; a reinstatement
-- until its chargeback debits are.
--
CREATE OR REPLACE FUNCTION mt5credit.claim_credit(p_worker text, p_lease_seconds integer,
    p_servers text[])
RETURNS SETOF mt5credit.work_item
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    IF p_lease_seconds < 1 THEN
        RAISE EXCEPTION 'lease must be at least a second' USING ERRCODE = 'MC020';
    END IF;

    PERFORM set_actor(p_worker, '{"step": "claim"}');

    WITH next AS (
        SELECT c.id
        FROM mt5_credit c
        WHERE c.status = 'pending'
          AND c.mt5_server = ANY (p_servers)
          AND (c.original_credit_id IS NULL
               OR EXISTS (SELECT 1 FROM mt5_credit o
                          WHERE o.id = c.original_credit_id
                            AND o.status = 'done'))
          -- a reinstatement gives back what its chargeback debits took:
          -- only once each of them is done (026)
          AND (c.kind <> 'chargeback' OR c.direction <> 'credit'
               OR NOT EXISTS (SELECT 1 FROM mt5_credit d
                              WHERE d.original_credit_id = c.original_credit_id
                                AND d.kind = 'chargeback'
                                AND d.direction = 'debit'
                                AND d.status <> 'done'))
        ORDER BY c.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    UPDATE mt5_credit c
    SET status = 'claimed',
        attempts = c.attempts + 1,
        claimed_at = clock_timestamp(),
        claimed_by = left(p_worker, 200),
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL
    FROM next
    WHERE c.id = next.id
      AND c.status = 'pending'
    RETURNING c.id INTO v_id;

    IF v_id IS NOT NULL THEN
        RETURN NEXT work_item_of(v_id);
    END IF;
END
$$;

CREATE FUNCTION mt5credit.reinstatement_check_debit()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v  record;
BEGIN
    -- the pairs of (pending reinstatement, failed chargeback debit) that
    -- this row's insert or change has just made
    FOR v IN
        SELECT r.id, r.reference, r.deposit_id, r.amount_minor, r.currency,
               r.original_credit_id, d.id AS debit_id,
               d.reference AS debit_reference
        FROM mt5_credit r
        JOIN mt5_credit d ON d.original_credit_id = r.original_credit_id
        WHERE r.original_credit_id = NEW.original_credit_id
          AND r.kind = 'chargeback' AND r.direction = 'credit'
          AND r.status = 'pending'
          AND d.kind = 'chargeback' AND d.direction = 'debit'
          AND d.status = 'failed'
          AND NEW.id IN (r.id, d.id)
    LOOP
        PERFORM open_case('reinstatement_after_failed_debit', 'high',
                          'reinstatement_after_failed_debit:credit:' || v.id,
                          jsonb_build_object(
                              'reinstatement', v.id,
                              'reinstatement_reference', v.reference,
                              'failed_debit', v.debit_id,
                              'failed_debit_reference', v.debit_reference,
                              'original_credit', v.original_credit_id),
                          v.id, v.deposit_id, NULL,
                          v.amount_minor, v.currency);
    END LOOP;

    RETURN NULL;
END
$$;

CREATE TRIGGER reinstatement_after_failed_debit_insert
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind = 'chargeback' AND NEW.direction = 'credit')
    EXECUTE FUNCTION mt5credit.reinstatement_check_debit();

CREATE TRIGGER reinstatement_after_failed_debit_update
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind = 'chargeback' AND NEW.direction = 'debit'
          AND NEW.status = 'failed' AND OLD.status <> 'failed')
    EXECUTE FUNCTION mt5credit.reinstatement_check_debit();
