--
-- 049: stored events searched by deposit and by a time window.
--
-- `mt5credit events list` could search by provider, type, disposition,
-- payment and a start time.  A person working a case starts from the
-- deposit (dep_...), and from "what came between 14:00 and 14:10".
-- events_list() is replaced with one that also takes p_deposit (the
-- events whose credit is of that deposit, or whose bytes name it: a
-- payment event carries the deposit in its metadata, a refund of it does
-- not, but its credit points at the deposit) and p_until.  039's
-- six-argument function is dropped; this file holds the current
-- definition.
--

DROP FUNCTION mt5credit.events_list(text, text, text, text, timestamptz,
                                    integer);

CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text,
    p_disposition text, p_payment text, p_deposit text,
    p_since timestamptz, p_until timestamptz, p_limit integer)
RETURNS TABLE (id bigint, provider text, provider_event_id text,
               event_type text, signature_scheme text,
               received_at timestamptz, disposition text, credit_id bigint,
               replays bigint, bytes integer, detail text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT e.id, e.provider, e.provider_event_id, e.event_type,
           e.signature_scheme, e.received_at, e.disposition, e.credit_id,
           (SELECT count(*) FROM webhook_event_replay r
            WHERE r.event_id = e.id),
           length(e.raw_body), e.detail
    FROM webhook_event e
    WHERE (p_provider IS NULL OR e.provider = p_provider)
      AND (p_type IS NULL OR e.event_type = p_type)
      AND (p_disposition IS NULL OR e.disposition = p_disposition)
      AND (p_since IS NULL OR e.received_at >= p_since)
      AND (p_until IS NULL OR e.received_at < p_until)
      AND (p_payment IS NULL
           OR position(convert_to(p_payment, 'UTF8') IN e.raw_body) > 0
           OR e.credit_id IN (SELECT c.id FROM mt5_credit c
                              WHERE c.provider_payment_id = p_payment))
      AND (p_deposit IS NULL
           OR position(convert_to(p_deposit, 'UTF8') IN e.raw_body) > 0
           OR e.credit_id IN (SELECT c.id FROM mt5_credit c
                              JOIN deposit d ON d.id = c.deposit_id
                              WHERE d.reference = p_deposit))
    ORDER BY e.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 10000)
$$;

REVOKE ALL ON FUNCTION mt5credit.events_list(text, text, text, text, text,
    timestamptz, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.events_list(text, text, text, text,
    text, timestamptz, timestamptz, integer)
    TO mt5credit_operator, mt5credit_reader;
