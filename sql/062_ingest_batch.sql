--
-- 062: ingest_batch(), the webhooks waiting on one edge connection
-- ingested in one transaction, their paid events written set-based.
--
-- Why: ingest() takes one event per call, and PostgreSQL pays every
-- statement's fixed costs again for each: above all the CHECK expressions
-- of the tables written, read back from their stored node strings and
-- planned in every INSERT and UPDATE (docs/scaling.md has the profile).
-- The same writes for 16 paid events in one statement ran at 3.8 times
-- ingest()'s rate on the same tables, with every guard (make bench's
-- set-based probe).
--
-- What it returns is, for each element, what ingest() returns for it,
-- with two more columns: error_code and error_message, set (and nothing
-- of that element written) when its ingest() raised.  One webhook's
-- failure never fails another.  The results are as if the elements were
-- ingested one after the other; their ids are drawn in another order.
--
-- How:
--   1. Every body is read as ingest() reads it, and its facts are taken.
--      An element goes the set-based way only when ingest() would simply
--      make its credit: one paid fact of a Stripe or standard event,
--      complete; and nothing else in the batch names its event, its
--      deposit or its payment.  Such elements share no row with the rest,
--      so writing them first gives the results of the batch's order.
--   2. Their deposits are read and locked in one statement, in id order
--      (two batches never wait for each other in a circle): found, the
--      same provider, amount and currency, created or pending, and
--      neither the payment nor the deposit credited yet, nor the event
--      stored.  Any other element goes the other way.
--   3. One statement writes their events (each naming its credit), their
--      credits and their deposits' move to succeeded, in a subtransaction.
--      The history triggers find each row's actor and detail, as ingest()
--      writes them, in a map this function sets (below).  Should it raise
--      (a concurrent delivery took a key), it is rolled back and its
--      elements go the other way.
--   4. Every other element is ingest() itself, in order, each in a
--      subtransaction of its own.
--
-- The actor per row.  The history rows take their actor from the
-- transaction's setting mt5credit.actor (004, 053).  While the statement
-- of step 3 runs, that setting is 'ingest:batch' and mt5credit.actors
-- holds each row's: credit c<id> its actor; deposit d<id> its actor,
-- credit and payment.  Only then do the two triggers look there.  A
-- caller who sets both itself gains nothing it could not write into
-- mt5credit.actor directly, and every function that keeps history sets
-- its own actor.
--
-- This file holds the current definitions of credit_guard_and_log()
-- (004's) and deposit_guard_and_log() (013's).
--


-- --- a row's actor in a batch -------------------------------------------------

-- the field separators of mt5credit.actors; an element whose actor or
-- payment holds one is ingested by ingest() instead
CREATE FUNCTION mt5credit.batch_entry(p_key text)
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_map  text;
    v_at   integer;
BEGIN
    IF current_setting('mt5credit.actor', true)
       IS DISTINCT FROM 'ingest:batch'
    THEN
        RETURN NULL;
    END IF;

    v_map := current_setting('mt5credit.actors', true);
    v_at := strpos(v_map, chr(30) || p_key || chr(31));
    IF v_at = 0 THEN
        RETURN NULL;
    END IF;

    RETURN split_part(substr(v_map, v_at + length(p_key) + 2), chr(30), 1);
END
$$;

COMMENT ON FUNCTION mt5credit.batch_entry(text) IS
    'While ingest_batch() writes its rows: the history actor of credit '
    'c<id>, or actor, credit and payment of deposit d<id>; else NULL.';


-- 004's credit_guard_and_log(), the actor of a batch's credit per row
CREATE OR REPLACE FUNCTION mt5credit.credit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.status <> 'pending' OR NEW.attempts <> 0
           OR NEW.mt5_deal_ticket IS NOT NULL
        THEN
            RAISE EXCEPTION 'credit must be created pending, unattempted'
                USING ERRCODE = 'MC010';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, NULL, NEW.status, NEW.attempts,
                coalesce(batch_entry('c' || NEW.id::text), credit_actor()),
                credit_detail());
        RETURN NEW;
    END IF;

    -- what a credit is about never changes after creation
    IF (NEW.kind, NEW.direction, NEW.original_credit_id, NEW.deposit_id,
        NEW.provider, NEW.provider_payment_id, NEW.mt5_server, NEW.mt5_login,
        NEW.amount_minor, NEW.currency, NEW.paid_amount_minor,
        NEW.paid_currency, NEW.fx_rate, NEW.fx_source, NEW.fx_at)
       IS DISTINCT FROM
       (OLD.kind, OLD.direction, OLD.original_credit_id, OLD.deposit_id,
        OLD.provider, OLD.provider_payment_id, OLD.mt5_server, OLD.mt5_login,
        OLD.amount_minor, OLD.currency, OLD.paid_amount_minor,
        OLD.paid_currency, OLD.fx_rate, OLD.fx_source, OLD.fx_at)
    THEN
        RAISE EXCEPTION 'credit % is immutable except for its state', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    -- a recorded deal ticket is evidence; it is never replaced
    IF OLD.mt5_deal_ticket IS NOT NULL
       AND NEW.mt5_deal_ticket IS DISTINCT FROM OLD.mt5_deal_ticket
    THEN
        RAISE EXCEPTION 'credit % already has deal ticket %',
                        OLD.id, OLD.mt5_deal_ticket
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.attempts < OLD.attempts THEN
        RAISE EXCEPTION 'credit % attempts cannot go down', OLD.id
            USING ERRCODE = 'MC011';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM credit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'credit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC012';
        END IF;

        INSERT INTO credit_history (credit_id, from_status, to_status,
                                    attempts, actor, detail)
        VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, credit_actor(),
                credit_detail());
    END IF;

    NEW.updated_at := now();
    RETURN NEW;
END
$$;


-- 013's deposit_guard_and_log(), the actor and detail of a batch's
-- deposit per row: as ingest_paid() sets them for its UPDATE (060)
CREATE OR REPLACE FUNCTION mt5credit.deposit_guard_and_log()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_entry   text;
    v_actor   text;
    v_detail  jsonb;
BEGIN
    IF (NEW.client_id, NEW.idempotency_key, NEW.provider, NEW.mt5_server,
        NEW.mt5_login, NEW.amount_minor, NEW.currency, NEW.account_currency,
        NEW.credit_amount_minor, NEW.fx_rate, NEW.fx_source, NEW.fx_at,
        NEW.created_at)
       IS DISTINCT FROM
       (OLD.client_id, OLD.idempotency_key, OLD.provider, OLD.mt5_server,
        OLD.mt5_login, OLD.amount_minor, OLD.currency, OLD.account_currency,
        OLD.credit_amount_minor, OLD.fx_rate, OLD.fx_source, OLD.fx_at,
        OLD.created_at)
    THEN
        RAISE EXCEPTION 'deposit % is immutable except for its status',
                        OLD.id USING ERRCODE = 'MC050';
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
        IF NOT EXISTS (SELECT 1 FROM deposit_transition
                       WHERE from_status = OLD.status
                         AND to_status = NEW.status)
        THEN
            RAISE EXCEPTION 'deposit %: % -> % is not a legal transition',
                            OLD.id, OLD.status, NEW.status
                USING ERRCODE = 'MC051';
        END IF;

        v_entry := batch_entry('d' || OLD.id::text);
        IF v_entry IS NULL THEN
            v_actor := credit_actor();
            v_detail := credit_detail();
        ELSE
            v_actor := split_part(v_entry, chr(31), 1);
            v_detail := jsonb_build_object(
                'credit', split_part(v_entry, chr(31), 2)::bigint,
                'payment', split_part(v_entry, chr(31), 3),
                'source', 'credit:' || split_part(v_entry, chr(31), 2));
        END IF;

        INSERT INTO deposit_history (deposit_id, from_status, to_status,
                                     actor, detail)
        VALUES (OLD.id, OLD.status, NEW.status, v_actor, v_detail);
    END IF;

    RETURN NEW;
END
$$;


-- --- ingest_batch() ------------------------------------------------------------

-- The arrays are one element per webhook, of equal length, as ingest()'s
-- arguments.  ord is the element's position, from 1; rows come in ord
-- order.
CREATE FUNCTION mt5credit.ingest_batch(p_provider text[], p_event_id text[],
    p_raw_body bytea[], p_scheme text[], p_signed_at bigint[],
    p_request_id text[])
RETURNS TABLE (ord integer, outcome text, credit_id bigint,
               event_row_id bigint, detail text, error_code text,
               error_message text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
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
            IF p_provider[i] = 'stripe' THEN
                v_facts := ARRAY(SELECT x FROM stripe_facts(v_type, v_body) x);
            ELSE
                v_facts := ARRAY(SELECT x
                                 FROM standard_facts(v_type, v_body) x);
            END IF;
            v_facts := v_facts
                       || ARRAY(SELECT x FROM status_facts(p_provider[i],
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
$$;

REVOKE ALL ON FUNCTION mt5credit.ingest_batch(text[], text[], bytea[],
    text[], bigint[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.ingest_batch(text[], text[], bytea[],
    text[], bigint[], text[]) TO mt5credit_ingest;
