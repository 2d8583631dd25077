--
-- 045: a signed body that can never be an event is kept, and refused.
--
-- A signed body nested 60,000 deep made the JSON cast in ingest() fail
-- with "stack depth limit exceeded": an error, so the edge answered 503,
-- and the provider retried the same bytes until it gave up.  Such errors
-- can never pass on retry.  Now they, like every other body ingest()
-- calls malformed (not UTF-8 JSON, not an object, no event id), are
-- answered 400 and their bytes are kept in webhook_malformed, once per
-- provider and body with the number of deliveries, for a person to read:
-- the provider signed them, so they are the provider's words.  Only
-- errors that may pass on retry (the database unreachable, a timeout, a
-- serialization failure) still get 503.
--
-- ingest() (039's) is re-declared here: this file holds its current
-- definition.  It also pins synchronous_commit on for its own
-- transaction, whatever the session says: the edge's 200 follows that
-- COMMIT, through a direct connection or a pooler alike.
--

CREATE TABLE mt5credit.webhook_malformed (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider          text        NOT NULL,
    raw_body          bytea       NOT NULL,
    body_sha256       bytea       NOT NULL CHECK (length(body_sha256) = 32),
    signature_scheme  text        NOT NULL,
    signed_at         timestamptz,
    reason            text        NOT NULL CHECK (length(reason) <= 500),
    deliveries        integer     NOT NULL DEFAULT 1 CHECK (deliveries > 0),
    first_received_at timestamptz NOT NULL DEFAULT now(),
    last_received_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, body_sha256),
    CHECK (body_sha256 = sha256(raw_body))
);

COMMENT ON TABLE mt5credit.webhook_malformed IS
    'Signed deliveries that are not an event and can never be one, kept '
    'as received (once per provider and body), answered 400.';

-- what was received is never rewritten: only counted again
CREATE FUNCTION mt5credit.webhook_malformed_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.raw_body, NEW.body_sha256, NEW.signature_scheme,
        NEW.reason, NEW.first_received_at)
       IS DISTINCT FROM
       (OLD.provider, OLD.raw_body, OLD.body_sha256, OLD.signature_scheme,
        OLD.reason, OLD.first_received_at)
       OR NEW.deliveries < OLD.deliveries
    THEN
        RAISE EXCEPTION 'a malformed delivery is kept as it came'
            USING ERRCODE = 'MC014';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER webhook_malformed_guard
    BEFORE UPDATE ON mt5credit.webhook_malformed
    FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_malformed_guard();

CREATE TRIGGER webhook_malformed_no_delete
    BEFORE DELETE ON mt5credit.webhook_malformed
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


-- ingest()'s answer for a body that is not an event: kept, and malformed
CREATE FUNCTION mt5credit.ingest_malformed(p_provider text,
    p_raw_body bytea, p_sha bytea, p_scheme text, p_signed_at bigint,
    p_reason text)
RETURNS TABLE (outcome text, credit_id bigint, event_row_id bigint,
               detail text)
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    INSERT INTO webhook_malformed (provider, raw_body, body_sha256,
                                   signature_scheme, signed_at, reason)
    VALUES (p_provider, p_raw_body, p_sha, p_scheme,
            to_timestamp(p_signed_at), left(p_reason, 500))
    ON CONFLICT (provider, body_sha256) DO UPDATE
        SET deliveries = webhook_malformed.deliveries + 1,
            last_received_at = now();

    RETURN QUERY SELECT 'malformed'::text, NULL::bigint, NULL::bigint,
                        p_reason;
END
$$;


-- 039's ingest(), every malformed answer kept, and errors that can never
-- pass on retry among them
CREATE OR REPLACE FUNCTION mt5credit.ingest(p_provider text, p_event_id text,
    p_raw_body bytea, p_scheme text, p_signed_at bigint)
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
                p_raw_body, v_sha, p_scheme, p_signed_at,
                'body is not UTF-8 JSON');
            RETURN;
        -- nested past the parser's stack, or past jsonb's limits: these
        -- bytes can never parse, however often they come
        WHEN statement_too_complex OR program_limit_exceeded THEN
            RETURN QUERY SELECT * FROM ingest_malformed(p_provider,
                p_raw_body, v_sha, p_scheme, p_signed_at,
                'body is JSON past what can be parsed (' || SQLERRM || ')');
            RETURN;
    END;

    IF jsonb_typeof(v_body) <> 'object' THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, 'body is not a JSON object');
        RETURN;
    END IF;

    v_id := coalesce(p_event_id, json_text(v_body->'id'));

    IF v_id IS NULL THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at,
            'no event id (string "id", 1..255 bytes)');
        RETURN;
    END IF;

    v_type := json_text(v_body->'type');

    PERFORM set_config('mt5credit.actor',
                       left('ingest:' || p_provider || ':' || v_id, 200),
                       true);

    INSERT INTO webhook_event (provider, provider_event_id, event_type,
                               raw_body, body_sha256, signature_scheme,
                               signed_at, disposition)
    VALUES (p_provider, v_id, v_type, p_raw_body, v_sha, p_scheme,
            to_timestamp(p_signed_at), 'ignored')
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
                                            signature_scheme, signed_at)
        VALUES (v_old.id, p_raw_body, v_sha, p_scheme,
                to_timestamp(p_signed_at))
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

GRANT SELECT ON mt5credit.webhook_malformed
    TO mt5credit_operator, mt5credit_reader;
