--
-- 075: a provider's payload format is data, and Checkout.com's own events
-- are read as they come.
--
-- Until now the way an event's body was read followed from the provider's
-- name: 'stripe' was read as Stripe, every other name as the generic
-- payload (docs/providers.md).  Checkout.com signs its own events
-- (payment_captured, payment_refunded, dispute_*), which do not fit the
-- generic payload, so a broker had to put an unsigned translation in
-- front of the signed edge.
--
-- provider_payload names, per provider, the format its bodies are read
-- in.  A provider without a row is read as the generic payload, so every
-- existing deployment reads exactly as before.  The formats themselves
-- stay functions, one per format, each returning payment_facts:
--   stripe_facts()      Stripe (refund lists and PaymentIntents need code)
--   standard_facts()    the generic payload
--   checkout_facts()    Checkout.com (new here)
-- payload_facts() is the one place that chooses between them; ingest()
-- (through ingest_facts()) and ingest_batch() both call it, so the two
-- paths cannot read one body two ways.
--
-- Re-declared, this file holds their current definitions:
--   ingest_facts()    (060's, through payload_facts())
--   ingest_batch()    (062's, through payload_facts())
--

CREATE TABLE mt5credit.provider_payload (
    provider    text PRIMARY KEY
                CHECK (provider ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
    payload     text NOT NULL
                CHECK (payload IN ('generic', 'stripe', 'checkout')),
    -- a name is always read as Stripe or never: its stored events
    -- were read so, and a backfill or replay reads them again
    CHECK ((provider = 'stripe') = (payload = 'stripe')),
    added_at    timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mt5credit.provider_payload IS
    'The format each provider''s bodies are read in (075); a provider '
    'without a row is read as the generic payload';

-- a format is chosen once, before the first event: a change would read
-- stored events (replays, backfills) otherwise than they were read
CREATE FUNCTION mt5credit.provider_payload_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' OR NEW.payload IS DISTINCT FROM OLD.payload
       OR NEW.provider IS DISTINCT FROM OLD.provider
    THEN
        RAISE EXCEPTION 'provider %: its payload format is fixed once '
                        'chosen; a new format needs a new provider name',
                        OLD.provider
            USING ERRCODE = 'MC013';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER provider_payload_fixed
    BEFORE UPDATE OR DELETE ON mt5credit.provider_payload
    FOR EACH ROW EXECUTE FUNCTION mt5credit.provider_payload_guard();

-- a provider with events keeps the format they were read in before
-- its row: Stripe's for 'stripe' (this file's own row, on a database
-- with Stripe's events), the generic payload for any other name
CREATE FUNCTION mt5credit.provider_payload_new()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_read text := CASE WHEN NEW.provider = 'stripe' THEN 'stripe'
                        ELSE 'generic' END;
BEGIN
    IF NEW.payload <> v_read
       AND EXISTS (SELECT 1 FROM webhook_event
                   WHERE provider = NEW.provider)
    THEN
        RAISE EXCEPTION 'provider %: events were already read as the '
                        '% payload', NEW.provider, v_read
            USING ERRCODE = 'MC013';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER provider_payload_before_events
    BEFORE INSERT ON mt5credit.provider_payload
    FOR EACH ROW EXECUTE FUNCTION mt5credit.provider_payload_new();

INSERT INTO mt5credit.provider_payload (provider, payload)
VALUES ('stripe', 'stripe');


-- Checkout.com (docs/providers.md "Checkout.com").  Amounts are integer
-- minor units in data.amount; the deposit is found by data.reference,
-- which the portal sets to our deposit reference.
--   payment_captured            money captured: paid, keyed by pay_ id
--   payment_approved, _pending  authorised or waiting: never money
--   payment_declined, payment_capture_declined
--                               failed
--   payment_expired, payment_canceled, payment_voided
--                               expired
--   payment_refunded            a refund, keyed by its action (act_)
--   dispute_evidence_required, dispute_accepted, dispute_lost,
--   dispute_expired             the disputed amount is debited: one
--                               chargeback per dispute (dsp_), however
--                               many of these come
--   dispute_won, dispute_canceled
--                               the amount comes back: its reversal
CREATE FUNCTION mt5credit.checkout_facts(p_type text, p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d       jsonb := p_body->'data';
    amount  bigint := json_minor(d->'amount');
    cur     text := upper(json_text(d->'currency'));
    id      text := json_text(d->'id');
BEGIN
    CASE p_type
    WHEN 'payment_captured' THEN
        RETURN NEXT ('paid', id, NULL, json_text(d->'reference'), amount,
                     cur, NULL)::payment_fact;

    WHEN 'payment_approved', 'payment_pending' THEN
        RETURN NEXT ('pending', id, NULL, json_text(d->'reference'), NULL,
                     cur, p_type)::payment_fact;

    WHEN 'payment_declined', 'payment_capture_declined' THEN
        RETURN NEXT ('failed', id, NULL, json_text(d->'reference'), NULL,
                     cur, p_type)::payment_fact;

    WHEN 'payment_expired', 'payment_canceled', 'payment_voided' THEN
        RETURN NEXT ('expired', id, NULL, json_text(d->'reference'), NULL,
                     cur, p_type)::payment_fact;

    WHEN 'payment_refunded' THEN
        RETURN NEXT ('refund', 'refund:' || json_text(d->'action_id'), id,
                     NULL, amount, cur, NULL)::payment_fact;

    WHEN 'dispute_evidence_required', 'dispute_accepted', 'dispute_lost',
         'dispute_expired'
    THEN
        RETURN NEXT ('chargeback', 'chargeback:' || id,
                     json_text(d->'payment_id'), NULL, amount, cur,
                     NULL)::payment_fact;

    WHEN 'dispute_won', 'dispute_canceled' THEN
        RETURN NEXT ('chargeback_reversal',
                     'chargeback:' || id || ':reversed',
                     json_text(d->'payment_id'), NULL, amount, cur,
                     NULL)::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;


-- the one place a body's format is chosen
CREATE FUNCTION mt5credit.payload_facts(p_provider text, p_type text,
                                        p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_payload text;
BEGIN
    SELECT payload INTO v_payload FROM provider_payload
    WHERE provider = p_provider;

    CASE coalesce(v_payload, 'generic')
    WHEN 'stripe' THEN
        RETURN QUERY SELECT * FROM stripe_facts(p_type, p_body);
        RETURN QUERY SELECT * FROM status_facts(p_provider, p_type, p_body);
    WHEN 'checkout' THEN
        RETURN QUERY SELECT * FROM checkout_facts(p_type, p_body);
    ELSE
        RETURN QUERY SELECT * FROM standard_facts(p_type, p_body);
        RETURN QUERY SELECT * FROM status_facts(p_provider, p_type, p_body);
    END CASE;
END
$$;


-- 060's, reading through payload_facts()
CREATE OR REPLACE FUNCTION mt5credit.ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint DEFAULT NULL::bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_facts  payment_fact[];
    f        payment_fact;
    s        ingest_step;
BEGIN
    disposition := 'ignored';
    created := false;

    -- the provider's own facts first, then its status facts, as before
    v_facts := ARRAY(SELECT x FROM payload_facts(p_provider, p_type,
                                                 p_body) x);

    FOREACH f IN ARRAY v_facts LOOP
        IF f.action = 'ignore' THEN
            detail := f.note;
            CONTINUE;
        END IF;

        IF f.action = 'paid' THEN
            s := ingest_paid(p_provider, f, p_event, p_credit);
            p_credit := NULL;
        ELSIF f.action IN ('pending', 'failed', 'expired') THEN
            s := ingest_status(p_provider, f, p_event, p_event_id);
        ELSE
            s := ingest_reversal(p_provider, f, p_event);
        END IF;

        -- one event may carry several facts (a refund list): the
        -- strongest disposition wins, a case above all
        IF s.disposition = 'case_opened' THEN
            disposition := 'case_opened';
        ELSIF s.disposition = 'credit_created'
              AND disposition <> 'case_opened'
        THEN
            disposition := 'credit_created';
        ELSIF s.disposition = 'already_credited'
              AND disposition = 'ignored'
        THEN
            disposition := 'already_credited';
        ELSIF s.disposition = 'status_recorded'
              AND disposition = 'ignored'
        THEN
            disposition := 'status_recorded';
        END IF;

        IF s.disposition = 'credit_created' THEN
            created := true;
        END IF;

        credit_id := coalesce(credit_id, s.credit_id);
        detail := coalesce(s.detail, detail);
    END LOOP;

    IF disposition = 'case_opened' AND credit_id IS NOT NULL AND created THEN
        -- some facts made credits and some cases: both are recorded
        detail := detail || ' (and credit ' || credit_id || ' created)';
    END IF;
END
$$;


-- 062's, reading through payload_facts()
CREATE OR REPLACE FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[], p_raw_body bytea[], p_scheme text[], p_signed_at bigint[], p_request_id text[]) RETURNS TABLE(ord integer, outcome text, credit_id bigint, event_row_id bigint, detail text, error_code text, error_message text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    n           integer := coalesce(array_length(p_raw_body, 1), 0);
    v_body      jsonb;
    v_id        text;
    v_type      text;
    v_facts     payment_fact[];
    f           payment_fact;
    v_seen      text[] := '{}';
    v_twice     text[] := '{}';
    v_keys      text[];
    v_fact      payment_fact[];      -- per element: its one paid fact
    v_eid       text[];              -- per element: its event id
    v_types     text[];              -- per element: its event type
    v_fast      boolean[];
    v_ok        boolean[];           -- per element: its deposit qualifies
    v_set       integer[] := '{}';
    v_credit    bigint[];
    v_row       bigint[];
    v_dep_id    bigint[];
    v_dep_st    text[];
    v_map       text;
    v_actor     text;
    v_saved     text;
    v_made      integer;
    r           record;
    i           integer;
    k           text;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;

    IF array_length(p_provider, 1) IS DISTINCT FROM n
       OR array_length(p_event_id, 1) IS DISTINCT FROM n
       OR array_length(p_scheme, 1) IS DISTINCT FROM n
       OR array_length(p_signed_at, 1) IS DISTINCT FROM n
       OR array_length(p_request_id, 1) IS DISTINCT FROM n
    THEN
        RAISE EXCEPTION 'ingest_batch(): % bodies, but arrays of other '
                        'lengths', n
            USING ERRCODE = '22023';
    END IF;

    -- the edge answers each webhook after this transaction commits
    PERFORM set_config('synchronous_commit', 'on', true);

    v_fact := array_fill(NULL::payment_fact, ARRAY[n]);
    v_eid := array_fill(NULL::text, ARRAY[n]);
    v_types := array_fill(NULL::text, ARRAY[n]);
    v_fast := array_fill(false, ARRAY[n]);

    -- 1. what each element is, read as ingest() reads it, and the keys
    --    it names: its event, and each fact's deposit and payments
    FOR i IN 1 .. n LOOP
        v_keys := '{}';
        v_facts := '{}';
        v_body := NULL;
        v_type := NULL;

        BEGIN
            v_body := convert_from(p_raw_body[i], 'UTF8')::jsonb;
        EXCEPTION
            WHEN invalid_text_representation OR character_not_in_repertoire
                 OR untranslatable_character OR invalid_parameter_value
                 OR statement_too_complex OR program_limit_exceeded
            THEN
                v_body := NULL;
        END;

        IF v_body IS NOT NULL AND jsonb_typeof(v_body) = 'object' THEN
            v_id := coalesce(p_event_id[i], json_text(v_body->'id'));
            v_type := json_text(v_body->'type');
            v_facts := ARRAY(SELECT x FROM payload_facts(p_provider[i],
                                                         v_type, v_body) x);
        ELSE
            v_id := p_event_id[i];
        END IF;

        IF v_id IS NOT NULL THEN
            v_keys := v_keys || ('e:' || p_provider[i] || ':' || v_id);
        END IF;
        FOREACH f IN ARRAY v_facts LOOP
            IF f.deposit_ref IS NOT NULL THEN
                v_keys := v_keys || ('d:' || f.deposit_ref);
            END IF;
            IF f.payment_key IS NOT NULL THEN
                v_keys := v_keys || ('p:' || p_provider[i] || ':'
                                     || f.payment_key);
            END IF;
            IF f.original_key IS NOT NULL THEN
                v_keys := v_keys || ('p:' || p_provider[i] || ':'
                                     || f.original_key);
            END IF;
        END LOOP;

        FOREACH k IN ARRAY v_keys LOOP
            IF k = ANY (v_seen) THEN
                v_twice := v_twice || k;
            ELSE
                v_seen := v_seen || k;
            END IF;
        END LOOP;

        -- the simple case: one paid fact, complete, an actor that fits
        -- the map
        f := v_facts[1];
        IF v_id IS NOT NULL AND array_length(v_facts, 1) = 1
           AND f.action = 'paid' AND f.payment_key IS NOT NULL
           AND f.amount_minor IS NOT NULL AND f.currency IS NOT NULL
           AND f.deposit_ref IS NOT NULL
           AND strpos(v_id || f.payment_key || p_provider[i], chr(30)) = 0
           AND strpos(v_id || f.payment_key || p_provider[i], chr(31)) = 0
        THEN
            v_fast[i] := true;
            v_fact[i] := f;
            v_eid[i] := v_id;
            v_types[i] := v_type;
        END IF;
    END LOOP;

    -- ... and nothing else in the batch names what it names
    FOR i IN 1 .. n LOOP
        f := v_fact[i];
        IF v_fast[i]
           AND NOT (('e:' || p_provider[i] || ':' || v_eid[i]) = ANY (v_twice)
                    OR ('d:' || f.deposit_ref) = ANY (v_twice)
                    OR ('p:' || p_provider[i] || ':' || f.payment_key)
                       = ANY (v_twice))
        THEN
            v_set := v_set || i;
        ELSE
            v_fast[i] := false;
        END IF;
    END LOOP;

    v_credit := array_fill(NULL::bigint, ARRAY[n]);
    v_row := array_fill(NULL::bigint, ARRAY[n]);
    v_dep_id := array_fill(NULL::bigint, ARRAY[n]);
    v_dep_st := array_fill(NULL::text, ARRAY[n]);

    IF array_length(v_set, 1) > 0 THEN
        BEGIN
            -- 2. their deposits, locked in id order, and read: one
            --    statement for them all (locked as returned, after the
            --    sort; a deposit moved meanwhile is read again, and left
            --    out if it no longer qualifies)
            v_ok := array_fill(false, ARRAY[n]);
            FOR r IN
                SELECT j, d.id AS deposit, d.status AS deposit_status
                FROM unnest(v_set) j
                JOIN deposit d ON d.reference = (v_fact[j]).deposit_ref
                WHERE d.provider = p_provider[j]
                  AND d.amount_minor = (v_fact[j]).amount_minor
                  AND d.currency = (v_fact[j]).currency
                  AND d.status IN ('created', 'pending')
                  AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                                  WHERE c.provider = p_provider[j]
                                    AND c.provider_payment_id
                                        = (v_fact[j]).payment_key)
                  AND NOT EXISTS (SELECT 1 FROM mt5_credit c
                                  WHERE c.deposit_id = d.id
                                    AND c.kind = 'deposit')
                  AND NOT EXISTS (SELECT 1 FROM webhook_event e
                                  WHERE e.provider = p_provider[j]
                                    AND e.provider_event_id = v_eid[j])
                ORDER BY d.id
                FOR UPDATE OF d
            LOOP
                v_ok[r.j] := true;
                v_dep_id[r.j] := r.deposit;
                v_dep_st[r.j] := r.deposit_status;
            END LOOP;

            -- the credits' ids, drawn in the batch's order
            FOREACH i IN ARRAY v_set LOOP
                IF v_ok[i] THEN
                    v_credit[i] := nextval('mt5credit.mt5_credit_id_seq');
                ELSE
                    v_fast[i] := false;
                END IF;
            END LOOP;

            v_set := ARRAY(SELECT j FROM unnest(v_set) j WHERE v_fast[j]);
            v_map := '';
            FOREACH i IN ARRAY v_set LOOP
                v_actor := left('ingest:' || p_provider[i] || ':' || v_eid[i],
                                200);
                v_map := v_map || chr(30) || 'c' || v_credit[i] || chr(31)
                         || v_actor || chr(30) || 'd' || v_dep_id[i]
                         || chr(31) || v_actor || chr(31) || v_credit[i]
                         || chr(31) || (v_fact[i]).payment_key;
            END LOOP;
            v_map := v_map || chr(30);

            -- 3. their events, credits and deposits in one statement
            IF array_length(v_set, 1) > 0 THEN
                v_saved := current_setting('mt5credit.actor', true);
                PERFORM set_config('mt5credit.actor', 'ingest:batch', true);
                PERFORM set_config('mt5credit.actors', v_map, true);

                WITH src AS MATERIALIZED (
                    SELECT j AS el, p_provider[j] AS provider,
                           v_eid[j] AS event_id, v_types[j] AS event_type,
                           p_raw_body[j] AS raw,
                           p_scheme[j] AS scheme, p_signed_at[j] AS signed_at,
                           CASE WHEN p_request_id[j] ~ '^[0-9a-f]{32}$'
                                THEN p_request_id[j] END AS request_id,
                           v_credit[j] AS credit, v_dep_id[j] AS deposit,
                           v_dep_st[j] AS deposit_status,
                           (v_fact[j]).payment_key AS payment,
                           (v_fact[j]).amount_minor AS amount,
                           (v_fact[j]).currency AS currency
                    FROM unnest(v_set) j),
                ev AS (
                    INSERT INTO webhook_event (provider, provider_event_id,
                        event_type, raw_body, body_sha256, signature_scheme,
                        signed_at, disposition, credit_id, request_id)
                    SELECT s.provider, s.event_id, s.event_type, s.raw, sha256(s.raw), s.scheme,
                           to_timestamp(s.signed_at), 'credit_created',
                           s.credit, s.request_id
                    FROM src s
                    ORDER BY s.el
                    RETURNING id, webhook_event.credit_id),
                cr AS (
                    INSERT INTO mt5_credit (id, kind, direction, deposit_id,
                        provider, provider_payment_id, mt5_server, mt5_login,
                        amount_minor, currency, paid_amount_minor,
                        paid_currency, fx_rate, fx_source, fx_at)
                    OVERRIDING SYSTEM VALUE
                    SELECT s.credit, 'deposit', 'credit', d.id, s.provider,
                           s.payment, d.mt5_server, d.mt5_login,
                           d.credit_amount_minor, d.account_currency,
                           s.amount, s.currency, d.fx_rate, d.fx_source,
                           d.fx_at
                    FROM src s JOIN deposit d ON d.id = s.deposit
                    ORDER BY s.el
                    RETURNING mt5_credit.id),
                up AS (
                    UPDATE deposit d
                    SET status = 'succeeded', updated_at = now()
                    FROM src s
                    WHERE d.id = s.deposit AND d.status = s.deposit_status
                    RETURNING d.id)
                SELECT array_agg(ev.id ORDER BY s.el) AS event_rows,
                       (SELECT count(*) FROM cr) AS credits,
                       (SELECT count(*) FROM up) AS deposits
                INTO r
                FROM src s JOIN ev ON ev.credit_id = s.credit;

                PERFORM set_config('mt5credit.actors', '', true);
                PERFORM set_config('mt5credit.actor', coalesce(v_saved, ''),
                                   true);

                v_made := array_length(v_set, 1);
                IF coalesce(array_length(r.event_rows, 1), 0) <> v_made
                   OR r.credits <> v_made OR r.deposits <> v_made
                THEN
                    RAISE EXCEPTION 'ingest_batch(): % events, % credits, '
                                    '% deposits written of %',
                                    coalesce(array_length(r.event_rows, 1), 0),
                                    r.credits, r.deposits, v_made
                        USING ERRCODE = 'MC111';
                END IF;

                FOR j IN 1 .. v_made LOOP
                    v_row[v_set[j]] := r.event_rows[j];
                END LOOP;
            END IF;
        EXCEPTION
            WHEN OTHERS THEN
                -- rolled back: each of them goes through ingest()
                v_set := '{}';
                v_fast := array_fill(false, ARRAY[n]);
        END;
    END IF;

    -- 4. the rest, in order, each alone
    FOR i IN 1 .. n LOOP
        IF v_fast[i] AND i = ANY (v_set) THEN
            ord := i;
            outcome := 'credit_created';
            credit_id := v_credit[i];
            event_row_id := v_row[i];
            detail := NULL;
            error_code := NULL;
            error_message := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        ord := i;
        error_code := NULL;
        error_message := NULL;
        BEGIN
            SELECT x.outcome, x.credit_id, x.event_row_id, x.detail
            INTO outcome, credit_id, event_row_id, detail
            FROM ingest(p_provider[i], p_event_id[i], p_raw_body[i],
                        p_scheme[i], p_signed_at[i], p_request_id[i]) x;
        EXCEPTION
            WHEN OTHERS THEN
                outcome := NULL;
                credit_id := NULL;
                event_row_id := NULL;
                detail := NULL;
                error_code := SQLSTATE;
                error_message := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;
END
$_$;

REVOKE ALL ON FUNCTION mt5credit.checkout_facts(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.payload_facts(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.provider_payload_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.provider_payload_new() FROM PUBLIC;
