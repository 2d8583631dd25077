--
-- 027: refunded or not, counted in the currency that was paid.
--
-- 020's deposit_refund_state() summed the refunds' amount_minor (the MT5
-- account's currency, after conversion) and compared it with the
-- deposit's amount_minor (the currency the client paid).  For an FX
-- deposit, USD 500.00 paid and EUR 461.73 credited, a full refund read
-- "partially refunded 461.73".  The paid amount of every reversal is on
-- its row (paid_amount_minor, in the deposit's currency), never
-- recomputed: that is what is summed now, and refunded_minor is in the
-- deposit's currency.
--
-- Re-declared (CREATE OR REPLACE); this file holds the current definition
-- of deposit_refund_state().  What is new: paid_amount_minor for
-- amount_minor.
--

CREATE OR REPLACE FUNCTION mt5credit.deposit_refund_state(p_client_id text,
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
           WHEN coalesce(sum(CASE r.direction
                             WHEN 'debit' THEN r.paid_amount_minor
                             ELSE -r.paid_amount_minor END), 0)
                >= d.amount_minor
           THEN 'refunded'
           WHEN coalesce(sum(CASE r.direction
                             WHEN 'debit' THEN r.paid_amount_minor
                             ELSE -r.paid_amount_minor END), 0)
                > 0
           THEN 'partially_refunded'
           ELSE 'none'
           END,
           coalesce(sum(CASE r.direction WHEN 'debit' THEN r.paid_amount_minor
                                         ELSE -r.paid_amount_minor END)
                    FILTER (WHERE r.status = 'done'), 0)::bigint,
           (count(r.id) FILTER (WHERE r.status <> 'done'))::integer
    FROM deposit d
    LEFT JOIN mt5_credit r
           ON r.deposit_id = d.id AND r.kind IN ('refund', 'chargeback')
    WHERE d.client_id = p_client_id AND d.reference = p_reference
    GROUP BY d.id, d.reference, d.amount_minor
$$;
