--
-- 026: a reversal waits for what it reverses, and never for ever.
--
-- A refund or a chargeback debit reverses a deposit's credit; a won
-- dispute's reinstatement (cbr:<id>) gives back what a chargeback debit
-- took.  claim_credit() (008) let a reversal go once the deposit credit
-- was done, so:
--   - a reinstatement could be credited while its chargeback debit was
--     pending, or after it had failed: deposit +100, the client
--     withdraws, the chargeback debit fails for want of funds, the dispute
--     is won, and +100 is credited again that was never taken back;
--   - a refund or chargeback of a credit that failed waited for ever,
--     with no case.
--
-- Here:
--   - claim_credit() is re-declared: a reinstatement is claimed only when
--     every chargeback debit of the same payment is done.  This file holds
--     its current definition; what is new is the condition marked 026.
--   - A reversal that can never be claimed is a case the moment it
--     becomes one (whichever of the two rows comes second):
--     reversal_of_failed_credit (its original failed) and
--     reinstatement_after_failed_debit (its chargeback debit failed),
--     both high.  The reversal stays pending and moves no money; if a
--     person re-queues the failed row and it is made, it follows.
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

CREATE FUNCTION mt5credit.reversal_check()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v  record;
BEGIN
    -- what this row's insert or failure has just made: a pending reversal
    -- of a failed credit, or a pending reinstatement of a failed
    -- chargeback debit; either waits for ever, so a person is told
    FOR v IN
        SELECT 'reversal_of_failed_credit' AS kind, r.id, r.reference,
               r.deposit_id, r.amount_minor, r.currency, o.id AS failed_id,
               o.reference AS failed_reference
        FROM mt5_credit r
        JOIN mt5_credit o ON o.id = r.original_credit_id
        WHERE r.status = 'pending' AND o.status = 'failed'
          AND NEW.id IN (r.id, o.id)
        UNION ALL
        SELECT 'reinstatement_after_failed_debit', r.id, r.reference,
               r.deposit_id, r.amount_minor, r.currency, d.id, d.reference
        FROM mt5_credit r
        JOIN mt5_credit d ON d.original_credit_id = r.original_credit_id
        WHERE r.original_credit_id = NEW.original_credit_id
          AND r.kind = 'chargeback' AND r.direction = 'credit'
          AND r.status = 'pending'
          AND d.kind = 'chargeback' AND d.direction = 'debit'
          AND d.status = 'failed'
          AND NEW.id IN (r.id, d.id)
    LOOP
        PERFORM open_case(v.kind, 'high',
                          v.kind || ':credit:' || v.id,
                          jsonb_build_object(
                              'waiting', v.id,
                              'waiting_reference', v.reference,
                              'failed', v.failed_id,
                              'failed_reference', v.failed_reference),
                          v.id, v.deposit_id, NULL,
                          v.amount_minor, v.currency);
    END LOOP;

    RETURN NULL;
END
$$;

CREATE TRIGGER reversal_check_insert
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.original_credit_id IS NOT NULL
          AND NEW.kind IN ('refund', 'chargeback'))
    EXECUTE FUNCTION mt5credit.reversal_check();

CREATE TRIGGER reversal_check_failed
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.status = 'failed' AND OLD.status <> 'failed')
    EXECUTE FUNCTION mt5credit.reversal_check();
