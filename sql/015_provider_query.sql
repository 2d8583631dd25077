--
-- 015: when the webhook never comes: asking the provider.
--
-- A webhook can be lost or late.  For a deposit that should have been
-- paid by now, `mt5credit poll-provider` asks the provider's API (Stripe:
-- the Checkout Session by its id, which the portal stores on the deposit)
-- and hands a trusted answer to the same ingest() the webhook path uses.
-- The answer is stored as an event of its own (scheme 'api': fetched by
-- us over TLS with our key, not signed by the provider), keyed by the
-- session and the answer's hash, so the same answer twice is one event;
-- and the credit's unique (provider, payment) key decides which path
-- creates the credit: never both.
--
-- Timeouts, errors and answers that cannot be trusted change nothing but
-- the query's own schedule: the next query backs off, and after the
-- configured number of attempts the deposit is given up on and left to
-- reconciliation, with a case.
--

ALTER TABLE mt5credit.deposit
    ADD COLUMN provider_session_id text
        CHECK (provider_session_id ~ '^[A-Za-z0-9_-]{1,255}$'),
    ADD COLUMN query_attempts integer NOT NULL DEFAULT 0
        CHECK (query_attempts >= 0),
    ADD COLUMN next_query_at timestamptz,
    ADD COLUMN query_given_up_at timestamptz,
    ADD CONSTRAINT deposit_one_session UNIQUE (provider, provider_session_id);

ALTER TABLE mt5credit.webhook_event
    DROP CONSTRAINT webhook_event_signature_scheme_check,
    ADD CONSTRAINT webhook_event_signature_scheme_check
        CHECK (signature_scheme IN ('stripe', 'standard', 'hmac-sha256',
                                    'api'));


--
-- The portal, right after creating the provider's session: which session
-- pays this deposit.  Set once; the same value again is fine.
--
CREATE FUNCTION mt5credit.deposit_set_session(p_client_id text,
    p_reference text, p_session_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_rows  integer;
BEGIN
    UPDATE deposit SET provider_session_id = p_session_id
    WHERE client_id = p_client_id AND reference = p_reference
      AND (provider_session_id IS NULL
           OR provider_session_id = p_session_id);
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'deposit % of client %: no such deposit, or it has '
                        'another session already', p_reference, p_client_id
            USING ERRCODE = 'MC060';
    END IF;
END
$$;


--
-- Deposits to ask about: this provider's, not paid yet (no deposit
-- credit), older than p_min_age, due, not given up on.
--
CREATE FUNCTION mt5credit.query_due(p_provider text, p_min_age interval,
    p_limit integer)
RETURNS TABLE (deposit_id bigint, reference text, session_id text,
               attempts integer)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT d.id, d.reference, d.provider_session_id, d.query_attempts
    FROM deposit d
    WHERE d.provider = p_provider
      AND d.status IN ('created', 'pending')
      AND d.provider_session_id IS NOT NULL
      AND d.query_given_up_at IS NULL
      AND d.created_at <= now() - p_min_age
      AND (d.next_query_at IS NULL OR d.next_query_at <= now())
      AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                      WHERE c.deposit_id = d.id AND c.kind = 'deposit')
    ORDER BY d.next_query_at NULLS FIRST, d.id
    LIMIT p_limit
$$;


--
-- A trusted answer (the caller checked: HTTP 200, the object and id it
-- asked for): stored as an event and ingested like a webhook.  The event
-- type follows the session's status; an open session is no event yet.
-- Returns ingest()'s outcome, or 'open'.
--
CREATE FUNCTION mt5credit.query_answered(p_provider text, p_deposit bigint,
    p_type text, p_answer bytea)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d        deposit;
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


--
-- The query's own schedule: after an answer that settled nothing, a
-- timeout or an error, the next query waits p_backoff * 2^(attempts - 1)
-- (at most a day); after p_max_attempts the deposit is given up on: left
-- to reconciliation, with a case for a person.  Returns 'scheduled' or
-- 'given_up'.
--
CREATE FUNCTION mt5credit.query_record(p_deposit bigint, p_why text,
    p_backoff interval, p_max_attempts integer)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d  deposit;
BEGIN
    UPDATE deposit
    SET query_attempts = query_attempts + 1,
        next_query_at = now() + least(p_backoff * 2 ^ query_attempts,
                                      interval '1 day')
    WHERE id = p_deposit AND query_given_up_at IS NULL
    RETURNING * INTO d;
    IF NOT FOUND THEN
        RETURN 'given_up';
    END IF;

    IF d.query_attempts < p_max_attempts THEN
        RETURN 'scheduled';
    END IF;

    UPDATE deposit SET query_given_up_at = now()
    WHERE id = d.id AND query_given_up_at IS NULL;

    PERFORM open_case('deposit_unconfirmed', 'medium',
        'deposit_unconfirmed:' || d.id,
        jsonb_build_object('deposit', d.reference,
                           'session', d.provider_session_id,
                           'attempts', d.query_attempts,
                           'last', p_why),
        NULL, d.id, NULL, d.amount_minor, d.currency);
    RETURN 'given_up';
END
$$;


GRANT EXECUTE ON FUNCTION
    mt5credit.deposit_set_session(text, text, text)
    TO mt5credit_portal;

GRANT EXECUTE ON FUNCTION
    mt5credit.query_due(text, interval, integer),
    mt5credit.query_answered(text, bigint, text, bytea),
    mt5credit.query_record(bigint, text, interval, integer)
    TO mt5credit_worker;
