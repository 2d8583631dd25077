--
-- 047: webhooks the provider could not deliver, fetched from its own list.
--
-- A webhook the edge never received (a network partition, an outage of
-- ours past the provider's retries, a misrouted endpoint) used to be
-- found by poll-provider for payments only, and for refunds and disputes
-- by the next day's reconciliation.  `mt5credit backfill stripe` reads
-- the provider's list of events it has not delivered (Stripe's
-- GET /v1/events?delivery_success=false, every page) and passes each
-- event's own bytes, fetched by id over TLS with our API key, to
-- backfill_event(), which gives them to ingest() as an API answer:
--   - An event already stored under its id (delivered after all, or
--     backfilled before) is not stored again.
--   - Otherwise it is stored under "backfill:<event id>" with its bytes
--     as the provider's API gave them, scheme 'api', and ingest's rules
--     apply as to any delivery: at most one credit per provider payment,
--     refund or dispute, so a webhook of the same event arriving later
--     is one more event and never a second credit.
--   - What is not one of the provider's events with the id asked for is
--     refused before ingest().
-- The caller is mt5credit_query, poll-provider's role: the same trust
-- (the provider's API, with our key) for the same kind of answer.
--

CREATE FUNCTION mt5credit.backfill_event(p_provider text, p_event_id text,
    p_event bytea)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    e    jsonb;
    v    webhook_event;
BEGIN
    IF p_event_id IS NULL OR p_event_id !~ '^evt_[A-Za-z0-9_]{1,250}$' THEN
        RAISE EXCEPTION 'not a provider event id: %', p_event_id
            USING ERRCODE = 'MC110';
    END IF;

    BEGIN
        e := convert_from(p_event, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        e := NULL;
    END;
    IF jsonb_typeof(e) IS DISTINCT FROM 'object'
       OR e->>'object' IS DISTINCT FROM 'event'
       OR e->>'id' IS DISTINCT FROM p_event_id
       OR jsonb_typeof(e->'data'->'object') IS DISTINCT FROM 'object'
    THEN
        RAISE EXCEPTION 'the answer for % is not that event', p_event_id
            USING ERRCODE = 'MC110';
    END IF;

    SELECT * INTO v FROM webhook_event
    WHERE provider = p_provider
      AND provider_event_id IN (p_event_id, 'backfill:' || p_event_id)
    ORDER BY id
    LIMIT 1;
    IF FOUND THEN
        RETURN QUERY SELECT 'stored'::text, v.credit_id, v.id,
                            ('already stored as ' || v.provider_event_id
                             || ', ' || v.disposition)::text;
        RETURN;
    END IF;

    RETURN QUERY SELECT * FROM ingest(p_provider, 'backfill:' || p_event_id,
                                      p_event, 'api', NULL);
END
$$;

REVOKE ALL ON FUNCTION mt5credit.backfill_event(text, text, bytea)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.backfill_event(text, text, bytea)
    TO mt5credit_query;
