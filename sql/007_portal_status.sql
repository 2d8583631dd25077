--
-- 007: what the client's return page may read.
--
-- A browser redirect after payment proves nothing: it can be closed,
-- replayed or never happen, and may arrive before or after the provider's
-- webhook.  So the return page only reads; money moves only on a verified
-- server-to-server event.  A client sees only their own deposits.

CREATE FUNCTION mt5credit.deposit_status(p_client_id text, p_reference text)
RETURNS TABLE (reference text, status text, amount_minor bigint,
               currency text, credit_status text, credited boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT d.reference, d.status, d.amount_minor, d.currency,
           c.status, coalesce(c.status = 'done', false)
    FROM deposit d
    LEFT JOIN mt5_credit c ON c.deposit_id = d.id AND c.kind = 'deposit'
    WHERE d.client_id = p_client_id AND d.reference = p_reference
$$;

COMMENT ON FUNCTION mt5credit.deposit_status(text, text) IS
    'The return page''s only view of a deposit: read-only, own deposits only.';

GRANT EXECUTE ON FUNCTION mt5credit.deposit_status(text, text)
    TO mt5credit_portal;
