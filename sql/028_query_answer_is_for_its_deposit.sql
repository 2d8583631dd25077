--
-- 028: a provider's answer is taken only for the deposit it was asked
-- about.
--
-- query_answered() (015) wrapped whatever bytes it was given as an event
-- and ingested them; ingest() credits the deposit the payload names.  So
-- the worker role, calling it with invented bytes naming another deposit,
-- created a pending credit of 7,777.00 for that one.  Now the answer must
-- be the object stored on the deposit (its provider_session_id: the
-- Checkout Session or PaymentIntent the portal registered) and name that
-- deposit's reference, amount and currency.  Anything else is refused
-- before ingest(), with a critical query_answer_mismatch case holding
-- what came and what was expected.  Returns 'refused' then.
--
-- Re-declared (CREATE OR REPLACE); this file holds the current definition
-- of query_answered().  What is new: the check marked 028.
--

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
                              'caller', session_user),
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
