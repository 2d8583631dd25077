--
-- 064: a program's answer makes a credit only where its deposit vouches
-- for it (issue 29, item 6).
--
-- poll-provider and backfill hold the provider's API key and log in as
-- members of mt5credit_query; what they pass is taken as the provider's
-- word.  028 bound query_answered() to the deposit asked about, but
-- 047's backfill_event() gave any event of the right shape to ingest():
-- with that role's credentials alone, a made-up payment_intent.succeeded
-- for an unpaid deposit of 7,777.00 was credit_created, and so was a
-- made-up payment.succeeded of a Standard Webhooks PSP, which has no API
-- for a program to ask.  query_answered() put the caller's event type
-- into its envelope as text: any type (a refund, a reinstatement), or
-- JSON of the caller's own.
--
-- Now an answer a program brings is taken only when:
--   - its provider is in provider_api (the schema owner's configuration),
--     asked by a group role the caller belongs to, through the door used:
--     its list of events (backfill), or its objects by id standing for
--     the event types listed (poll-provider).  Stripe, asked by
--     mt5credit_query, is the one row;
--   - a fact in it that pays a deposit names the payment or session the
--     portal stored on that deposit (provider_session_id, set once by
--     deposit_set_session()) and the deposit's amount and currency,
--     unless that payment is already the deposit's credit (nothing new
--     is made);
--   - it carries no dispute reinstatement: money back to MT5 that
--     nothing the portal stored names.  A lost reinstatement comes from
--     the signed webhook, or from a person through the case.
-- Anything else stores nothing (so reconciliation has no event to replay
-- into a credit), answers 'refused', and opens a critical
-- query_answer_mismatch case with what came, what was expected, the
-- answer's SHA-256 and the caller.  Refunds and disputes that take money
-- back, and status reports, go to ingest() as before, whose rules tie
-- them to a payment we credited and cap them at what it paid.
--
-- What a program can still do with its own credentials is in
-- docs/security.md: an answer naming a deposit's stored session with its
-- amount is taken, and reconciliation (credited_not_settled) finds one
-- the provider never settled.
--
-- Re-declared, this file holds their current definitions:
--   backfill_event()   (047)
--   query_answered()   (053, which re-declared 028's)
--

CREATE TABLE mt5credit.provider_api (
    provider      text     PRIMARY KEY
                  CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    -- the group role whose programs ask it, with its API key
    asked_by      text     NOT NULL CHECK (asked_by ~ '^mt5credit_[a-z_]+$'),
    -- backfill: its list of the events it could not deliver
    lists_events  boolean  NOT NULL,
    -- poll-provider: the event types an object asked for by its id may
    -- stand for ('{}': never asked)
    query_types   text[]   NOT NULL DEFAULT '{}'
                  CHECK (array_position(query_types, NULL) IS NULL
                         AND array_to_string(query_types, ' ')
                             ~ '^([a-z][a-z0-9_.]*( |$))*$'),
    CHECK (lists_events OR cardinality(query_types) > 0)
);

COMMENT ON TABLE mt5credit.provider_api IS
    'The providers whose API a program asks, which group role asks, and '
    'for what; an answer about any other is refused with a case (064). '
    'Configuration: the schema owner edits it.';

INSERT INTO mt5credit.provider_api (provider, asked_by, lists_events,
                                    query_types)
VALUES ('stripe', 'mt5credit_query', true,
        -- mc_query.c: a Checkout Session's and a PaymentIntent's statuses
        ARRAY['checkout.session.completed', 'checkout.session.expired',
              'payment_intent.succeeded', 'payment_intent.processing',
              'payment_intent.canceled']);

REVOKE ALL ON mt5credit.provider_api FROM PUBLIC;


--
-- Why a program may not answer for p_provider through p_door ('events'
-- or 'query', standing for p_type), or NULL when it may.  The caller is
-- the role a SET ROLE chose, else the login.
--
CREATE FUNCTION mt5credit.program_door_closed(p_provider text,
    p_door text, p_type text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    a         provider_api;
    v_caller  text := coalesce(nullif(current_setting('role'), 'none'),
                               session_user);
BEGIN
    SELECT * INTO a FROM provider_api WHERE provider = p_provider;
    IF NOT FOUND THEN
        RETURN 'no program asks ' || p_provider || '''s API (provider_api)';
    END IF;

    IF NOT pg_has_role(v_caller, a.asked_by, 'MEMBER') THEN
        RETURN v_caller || ' is not ' || a.asked_by || ', which asks '
               || p_provider;
    END IF;

    IF p_door = 'events' AND NOT a.lists_events THEN
        RETURN 'no program reads ' || p_provider || '''s list of events';
    END IF;

    IF p_door = 'query' AND NOT coalesce(p_type = ANY (a.query_types), false)
    THEN
        RETURN 'an answer to a query of ' || p_provider || ' never stands '
               || 'for ' || coalesce('"' || p_type || '"', 'no type');
    END IF;

    RETURN NULL;
END
$$;


--
-- What p_body, a provider's event as a program brought it, would credit
-- to MT5 that its deposit does not vouch for: NULL when nothing, else
-- why, with what came (got), what was expected and the deposit.  The
-- facts are ingest()'s own (ingest_facts()'s provider facts).
--
CREATE FUNCTION mt5credit.program_answer_unvouched(p_provider text,
    p_type text, p_body jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_facts   payment_fact[];
    f         payment_fact;
    d         deposit;
    v_found   boolean;
    v_object  text := p_body #>> '{data,object,id}';
BEGIN
    IF p_provider = 'stripe' THEN
        v_facts := ARRAY(SELECT x FROM stripe_facts(p_type, p_body) x);
    ELSE
        v_facts := ARRAY(SELECT x FROM standard_facts(p_type, p_body) x);
    END IF;

    FOREACH f IN ARRAY v_facts LOOP
        IF f.action = 'chargeback_reversal' THEN
            RETURN jsonb_build_object(
                'why', 'money back to MT5 for a dispute: nothing the portal '
                       'stored names it',
                'got', to_jsonb(f),
                'deposit', (SELECT c.deposit_id FROM mt5_credit c
                            WHERE c.provider = p_provider
                              AND c.provider_payment_id = f.original_key
                              AND c.kind = 'deposit'));
        END IF;

        CONTINUE WHEN f.action IS DISTINCT FROM 'paid';

        SELECT * INTO d FROM deposit WHERE reference = f.deposit_ref;
        v_found := FOUND;

        -- the deposit's own credit already: ingest() makes nothing new
        CONTINUE WHEN v_found AND EXISTS (
            SELECT 1 FROM mt5_credit c
            WHERE c.provider = p_provider
              AND c.provider_payment_id = f.payment_key
              AND c.deposit_id = d.id AND c.kind = 'deposit');

        IF NOT v_found
           OR d.provider <> p_provider
           OR d.provider_session_id IS NULL
           OR (d.provider_session_id IS DISTINCT FROM v_object
               AND d.provider_session_id IS DISTINCT FROM f.payment_key)
           OR f.amount_minor IS DISTINCT FROM d.amount_minor
           OR f.currency IS DISTINCT FROM d.currency
        THEN
            RETURN jsonb_build_object(
                'why', 'not the payment the portal stored on the deposit, '
                       'or not its amount and currency',
                'got', jsonb_build_object(
                    'id', v_object,
                    'payment', f.payment_key,
                    'reference', f.deposit_ref,
                    'amount_minor', f.amount_minor::text,
                    'currency', f.currency),
                'expected', CASE WHEN v_found THEN jsonb_build_object(
                    'id', d.provider_session_id,
                    'reference', d.reference,
                    'provider', d.provider,
                    'amount_minor', d.amount_minor::text,
                    'currency', d.currency) END,
                'deposit', CASE WHEN v_found THEN d.id END);
        END IF;
    END LOOP;

    RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION
    mt5credit.program_door_closed(text, text, text),
    mt5credit.program_answer_unvouched(text, text, jsonb)
    FROM PUBLIC;


-- 047's backfill_event(): the provider's door first, the facts before
-- ingest()
CREATE OR REPLACE FUNCTION mt5credit.backfill_event(p_provider text,
    p_event_id text, p_event bytea)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    e        jsonb;
    v        webhook_event;
    v_why    jsonb;
    v_sha    text := encode(sha256(p_event), 'hex');
    v_closed text;
    d        deposit;
    v_case   bigint;
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

    -- 064: a provider no program of the caller's reads the events of
    -- (a Standard Webhooks PSP has no such list): never, whatever the bytes
    v_closed := program_door_closed(p_provider, 'events', NULL);
    IF v_closed IS NOT NULL THEN
        v_why := jsonb_build_object('why', v_closed);
    ELSE
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

        -- 064: what it would credit, its deposit vouches for
        v_why := program_answer_unvouched(p_provider, e->>'type', e);
    END IF;

    IF v_why IS NOT NULL THEN
        SELECT * INTO d FROM deposit
        WHERE id = (v_why->>'deposit')::bigint;

        v_case := open_case('query_answer_mismatch', 'critical',
                            'query_answer_mismatch:backfill:' || p_provider
                                || ':' || p_event_id || ':' || v_sha,
                            jsonb_build_object(
                                'why', v_why->'why',
                                'provider', p_provider,
                                'event', p_event_id,
                                'type', e->>'type',
                                'got', v_why->'got',
                                'expected', v_why->'expected',
                                'answer_sha256', v_sha,
                                'caller', mt5credit.person()),
                            NULL, d.id, NULL, d.amount_minor, d.currency);

        RETURN QUERY SELECT 'refused'::text, NULL::bigint, NULL::bigint,
                            ((v_why->>'why') || ': case ' || v_case)::text;
        RETURN;
    END IF;

    RETURN QUERY SELECT * FROM ingest(p_provider, 'backfill:' || p_event_id,
                                      p_event, 'api', NULL);
END
$$;


-- 053's query_answered(): the provider's door and the event type, 028's
-- check of the object, and the facts its envelope would give ingest()
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
    v_closed text;
    v_why    jsonb;
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

    -- 064: a provider this caller's program asks, for a type it asks for
    v_closed := program_door_closed(p_provider, 'query', p_type);

    IF v_closed IS NOT NULL THEN
        v_why := jsonb_build_object('why', v_closed);

    -- 028: the object asked for, about this deposit, for its money
    ELSIF jsonb_typeof(o) IS DISTINCT FROM 'object'
          OR d.provider_session_id IS NULL
          OR v_got->>'id' IS DISTINCT FROM d.provider_session_id
          OR v_got->>'reference' IS DISTINCT FROM d.reference
          OR v_got->>'amount_minor' IS DISTINCT FROM d.amount_minor::text
          OR v_got->>'currency' IS DISTINCT FROM d.currency
    THEN
        v_why := jsonb_build_object('why', 'not the object stored on the '
                                           'deposit, or not its reference, '
                                           'amount or currency');

    -- 064: and what it would credit, as ingest() will read it
    ELSE
        v_why := program_answer_unvouched(p_provider, p_type,
                     jsonb_build_object('type', p_type,
                                        'data', jsonb_build_object('object',
                                                                   o)));
    END IF;

    IF v_why IS NOT NULL THEN
        PERFORM open_case('query_answer_mismatch', 'critical',
                          'query_answer_mismatch:deposit:' || d.id || ':'
                              || encode(sha256(p_answer), 'hex'),
                          jsonb_build_object(
                              'why', v_why->'why',
                              'type', p_type,
                              'got', v_got,
                              'expected', jsonb_build_object(
                                  'id', d.provider_session_id,
                                  'reference', d.reference,
                                  'amount_minor', d.amount_minor::text,
                                  'currency', d.currency),
                              'answer_sha256',
                                  encode(sha256(p_answer), 'hex'),
                              'caller', mt5credit.person()),
                          NULL, d.id, NULL, d.amount_minor, d.currency);
        RETURN 'refused';
    END IF;

    -- the provider's bytes, verbatim, inside an event envelope of ours
    -- (p_type is one of provider_api's query_types: no quote in it)
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
