--
-- 051: the edge's request id is stored with what it stored.
--
-- nginx gives every request a $request_id (32 hex digits), which an
-- access_log line carries (docs/observability.md).  Until now nothing in
-- the database did, so "this 503 in the access log: which delivery was
-- it, what did ingest() do" was answered by time and guesswork.  Now
-- ingest() takes it and keeps it beside the bytes: on the event, on a
-- conflicting body, and on a malformed body (its first and its latest
-- delivery).  `mt5credit events list --request-id` finds the event,
-- `events show` prints it.
--
-- Expand, then contract: ingest() gains a sixth argument as a function of
-- its own; the five-argument one stays, as a wrapper passing no id, so an
-- edge built before this migration keeps storing events while the edges
-- are upgraded (migrate first, then the edges: a new edge prepares the
-- six-argument statement).  A later migration drops the wrapper.
--
-- This file holds the current definitions of ingest() (both),
-- ingest_malformed(), webhook_event_guard(), webhook_malformed_guard(),
-- events_list() and event_show().
--

-- the shape of nginx's $request_id; NULL where no request brought it
-- (poll-provider's answers, backfill, replays, an older edge)
CREATE DOMAIN mt5credit.request_id AS text
    CHECK (VALUE ~ '^[0-9a-f]{32}$');

ALTER TABLE mt5credit.webhook_event
    ADD COLUMN request_id mt5credit.request_id;
ALTER TABLE mt5credit.webhook_event_conflict
    ADD COLUMN request_id mt5credit.request_id;
ALTER TABLE mt5credit.webhook_malformed
    ADD COLUMN first_request_id mt5credit.request_id,
    ADD COLUMN last_request_id mt5credit.request_id;

-- a log line leads to its event: looked up by the id alone
CREATE INDEX webhook_event_request_id_idx
    ON mt5credit.webhook_event (request_id) WHERE request_id IS NOT NULL;


-- 005's guard: the request id is evidence too, as the bytes are
CREATE OR REPLACE FUNCTION mt5credit.webhook_event_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.provider_event_id, NEW.event_type, NEW.raw_body,
        NEW.body_sha256, NEW.signature_scheme, NEW.signed_at, NEW.received_at,
        NEW.request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.provider_event_id, OLD.event_type, OLD.raw_body,
        OLD.body_sha256, OLD.signature_scheme, OLD.signed_at, OLD.received_at,
        OLD.request_id)
    THEN
        RAISE EXCEPTION 'webhook event % is evidence: its content is '
                        'immutable', OLD.id
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;


-- 045's guard: the first delivery's id stays; the latest one moves on
CREATE OR REPLACE FUNCTION mt5credit.webhook_malformed_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.raw_body, NEW.body_sha256, NEW.signature_scheme,
        NEW.reason, NEW.first_received_at, NEW.first_request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.raw_body, OLD.body_sha256, OLD.signature_scheme,
        OLD.reason, OLD.first_received_at, OLD.first_request_id)
       OR NEW.deliveries < OLD.deliveries
    THEN
        RAISE EXCEPTION 'a malformed delivery is kept as it came'
            USING ERRCODE = 'MC014';
    END IF;
    RETURN NEW;
END
$$;


-- 045's ingest_malformed(), with the delivery's request id
DROP FUNCTION mt5credit.ingest_malformed(text, bytea, bytea, text, bigint,
                                         text);

CREATE FUNCTION mt5credit.ingest_malformed(p_provider text,
    p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint,
    p_request_id text, p_reason text)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO webhook_malformed (provider, raw_body, body_sha256,
                                   signature_scheme, signed_at, reason,
                                   first_request_id, last_request_id)
    VALUES (p_provider, p_raw_body, p_sha, p_scheme,
            to_timestamp(p_signed_at), left(p_reason, 500), p_request_id,
            p_request_id)
    ON CONFLICT (provider, body_sha256) DO UPDATE
        SET deliveries = webhook_malformed.deliveries + 1,
            last_received_at = now(),
            last_request_id = EXCLUDED.last_request_id;

    RETURN QUERY SELECT 'malformed'::text, NULL::bigint, NULL::bigint,
                        p_reason;
END
$$;

REVOKE ALL ON FUNCTION mt5credit.ingest_malformed(text, bytea, bytea, text,
    bigint, text, text) FROM PUBLIC;


-- 045's ingest(), the request id kept on every row it writes.  An id not
-- of nginx's shape is stored as none: a diagnostic never refuses an
-- event (a refusal would be a 503, and the provider's retries forever).
CREATE FUNCTION mt5credit.ingest(p_provider text, p_event_id text,
    p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_body      jsonb;
    v_type      text;
    v_id        text;
    v_sha       bytea := sha256(p_raw_body);
    v_rid       text := CASE WHEN p_request_id ~ '^[0-9a-f]{32}$'
                             THEN p_request_id END;
    v_row       bigint;
    v_old       webhook_event;
    v_conflict  bigint;
    v_case      bigint;
    x           record;
BEGIN
    -- the edge answers 200 after this transaction commits: durably, also
    -- when its session's own setting did not come through (a pooler that
    -- drops startup options)
    PERFORM set_config('synchronous_commit', 'on', true);

    BEGIN
        v_body := convert_from(p_raw_body, 'UTF8')::jsonb;
    EXCEPTION
        WHEN invalid_text_representation OR character_not_in_repertoire
             OR untranslatable_character OR invalid_parameter_value
        THEN
            RETURN QUERY SELECT * FROM ingest_malformed(p_provider,
                p_raw_body, v_sha, p_scheme, p_signed_at, v_rid,
                'body is not UTF-8 JSON');
            RETURN;
        -- nested past the parser's stack, or past jsonb's limits: these
        -- bytes can never parse, however often they come
        WHEN statement_too_complex OR program_limit_exceeded THEN
            RETURN QUERY SELECT * FROM ingest_malformed(p_provider,
                p_raw_body, v_sha, p_scheme, p_signed_at, v_rid,
                'body is JSON past what can be parsed (' || SQLERRM || ')');
            RETURN;
    END;

    IF jsonb_typeof(v_body) <> 'object' THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, v_rid,
            'body is not a JSON object');
        RETURN;
    END IF;

    v_id := coalesce(p_event_id, json_text(v_body->'id'));

    IF v_id IS NULL THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, v_rid,
            'no event id (string "id", 1..255 bytes)');
        RETURN;
    END IF;

    v_type := json_text(v_body->'type');

    PERFORM set_config('mt5credit.actor',
                       left('ingest:' || p_provider || ':' || v_id, 200),
                       true);

    INSERT INTO webhook_event (provider, provider_event_id, event_type,
                               raw_body, body_sha256, signature_scheme,
                               signed_at, disposition, request_id)
    VALUES (p_provider, v_id, v_type, p_raw_body, v_sha, p_scheme,
            to_timestamp(p_signed_at), 'ignored', v_rid)
    ON CONFLICT (provider, provider_event_id) DO NOTHING
    RETURNING id INTO v_row;

    IF v_row IS NULL THEN
        SELECT * INTO v_old FROM webhook_event
        WHERE provider = p_provider AND provider_event_id = v_id;

        IF v_old.body_sha256 = v_sha THEN
            RETURN QUERY SELECT 'duplicate'::text, v_old.credit_id, v_old.id,
                                NULL::text;
            RETURN;
        END IF;

        INSERT INTO webhook_event_conflict (event_id, raw_body, body_sha256,
                                            signature_scheme, signed_at,
                                            request_id)
        VALUES (v_old.id, p_raw_body, v_sha, p_scheme,
                to_timestamp(p_signed_at), v_rid)
        ON CONFLICT (event_id, body_sha256) DO NOTHING
        RETURNING id INTO v_conflict;

        v_case := open_case('event_body_conflict', 'high',
                            'event_body_conflict:' || v_old.id || ':'
                                || encode(v_sha, 'hex'),
                            jsonb_build_object(
                                'provider', p_provider,
                                'provider_event_id', v_id,
                                'stored_sha256',
                                    encode(v_old.body_sha256, 'hex'),
                                'new_sha256', encode(v_sha, 'hex')),
                            v_old.credit_id, NULL, v_old.id);

        RETURN QUERY SELECT 'conflict'::text, NULL::bigint, v_old.id,
                            ('event id stored with other bytes: case '
                             || v_case)::text;
        RETURN;
    END IF;

    x := ingest_facts(p_provider, v_type, v_body, v_row, v_id);

    UPDATE webhook_event
    SET disposition = x.disposition, credit_id = x.credit_id,
        detail = x.detail
    WHERE id = v_row;

    RETURN QUERY SELECT CASE
                        WHEN x.created THEN 'credit_created'
                        WHEN x.disposition = 'case_opened' THEN 'case_opened'
                        ELSE 'stored' END,
                        x.credit_id, v_row, x.detail;
END
$$;


REVOKE ALL ON FUNCTION mt5credit.ingest(text, text, bytea, text, bigint, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    mt5credit.ingest(text, text, bytea, text, bigint, text)
    TO mt5credit_ingest;


-- the five-argument ingest() of an edge built before this migration: the
-- same, without a request id (dropped once every edge passes one)
CREATE OR REPLACE FUNCTION mt5credit.ingest(p_provider text, p_event_id text,
    p_raw_body bytea, p_scheme text, p_signed_at bigint)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT * FROM mt5credit.ingest(p_provider, p_event_id, p_raw_body,
                                   p_scheme, p_signed_at, NULL::text)
$$;


-- 049's events_list(), and by request id
DROP FUNCTION mt5credit.events_list(text, text, text, text, text,
    timestamptz, timestamptz, integer);

CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text,
    p_disposition text, p_payment text, p_deposit text,
    p_since timestamptz, p_until timestamptz, p_request_id text,
    p_limit integer)
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
      -- the event, or the event a conflicting body under its id came to
      AND (p_request_id IS NULL OR e.request_id = p_request_id
           OR e.id IN (SELECT k.event_id FROM webhook_event_conflict k
                       WHERE k.request_id = p_request_id))
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
    timestamptz, timestamptz, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.events_list(text, text, text, text,
    text, timestamptz, timestamptz, text, integer)
    TO mt5credit_operator, mt5credit_reader;


-- 039's event_show(), with the request ids
CREATE OR REPLACE FUNCTION mt5credit.event_show(p_event bigint)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_build_object(
        'id', e.id, 'provider', e.provider,
        'provider_event_id', e.provider_event_id,
        'event_type', e.event_type,
        'signature_scheme', e.signature_scheme,
        'signed_at', e.signed_at, 'received_at', e.received_at,
        'request_id', e.request_id,
        'body_sha256', encode(e.body_sha256, 'hex'),
        'bytes', length(e.raw_body),
        'raw_body', convert_from(e.raw_body, 'UTF8'),
        'disposition', e.disposition, 'credit_id', e.credit_id,
        'detail', e.detail,
        'conflicts', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'id', k.id, 'body_sha256', encode(k.body_sha256, 'hex'),
                'received_at', k.received_at, 'request_id', k.request_id)
                ORDER BY k.id)
            FROM webhook_event_conflict k WHERE k.event_id = e.id), '[]'),
        'replays', coalesce((SELECT jsonb_agg(to_jsonb(r) - 'event_id'
                                              ORDER BY r.id)
            FROM webhook_event_replay r WHERE r.event_id = e.id), '[]'))
    FROM webhook_event e
    WHERE e.id = p_event
$$;
