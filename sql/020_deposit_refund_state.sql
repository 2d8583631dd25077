--
-- 020: refunding and refunded, as the client may see them.
--
-- A deposit's own status stops at succeeded (013): refunds and
-- chargebacks are records of their own, each an mt5_credit row linked to
-- the deposit's credit, made through the same claim and resolve path.
-- What the portal shows about them is derived from those records, never
-- stored twice:
--
--   none                no refund or chargeback
--   refunding           one is still being made (pending, claimed,
--                       unknown), or a person must decide (failed)
--   partially_refunded  all made, less than the deposit in all
--   refunded            all made, the whole deposit
--
-- A chargeback reversal gives money back to the client: it counts
-- against what was taken.
--

CREATE FUNCTION mt5credit.deposit_refund_state(p_client_id text,
    p_reference text)
RETURNS TABLE (reference text, refund_state text, refunded_minor bigint,
               open_count integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT d.reference,
           CASE
           WHEN count(r.id) = 0 THEN 'none'
           WHEN count(r.id) FILTER (WHERE r.status <> 'done') > 0
           THEN 'refunding'
           WHEN coalesce(sum(CASE r.direction WHEN 'debit' THEN r.amount_minor
                                              ELSE -r.amount_minor END), 0)
                >= d.amount_minor
           THEN 'refunded'
           WHEN coalesce(sum(CASE r.direction WHEN 'debit' THEN r.amount_minor
                                              ELSE -r.amount_minor END), 0)
                > 0
           THEN 'partially_refunded'
           ELSE 'none'
           END,
           coalesce(sum(CASE r.direction WHEN 'debit' THEN r.amount_minor
                                         ELSE -r.amount_minor END)
                    FILTER (WHERE r.status = 'done'), 0)::bigint,
           (count(r.id) FILTER (WHERE r.status <> 'done'))::integer
    FROM deposit d
    LEFT JOIN mt5_credit r
           ON r.deposit_id = d.id AND r.kind IN ('refund', 'chargeback')
    WHERE d.client_id = p_client_id AND d.reference = p_reference
    GROUP BY d.id, d.reference, d.amount_minor
$$;

COMMENT ON FUNCTION mt5credit.deposit_refund_state(text, text) IS
    'The return page''s view of a deposit''s refunds and chargebacks, '
    'derived from their records: read-only, own deposits only.';

GRANT EXECUTE ON FUNCTION mt5credit.deposit_refund_state(text, text)
    TO mt5credit_portal;
