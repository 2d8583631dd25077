--
-- 039: stored events can be listed, shown and replayed.
--
-- Every webhook event is stored as its raw bytes, after its signature was
-- verified at the edge (or, for poll-provider's answers, after the
-- provider's API gave it over TLS).  Replaying one runs those same bytes
-- through what ingest() does with a new event, under the same unique keys:
-- a payment that already has its credit is `already_credited`, so a
-- replay can never make a second credit.  What it is for:
--   - an event stored while its deposit could not yet be used (no deposit
--     yet, a case opened), once the deposit is there;
--   - an event ignored by rules since fixed (what counts as paid).
-- The event row itself never changes (it is evidence, 005): each replay
-- is a row of its own, with who, when, why and the outcome.
--
-- Reconciliation may replay by itself (sql/040): it is the one automatic
-- fix, because it moves nothing the provider's signed event did not
-- already say, through the same path and checks as the first delivery.
--
-- ingest() is re-declared here (its current definition): the facts loop
-- is now ingest_facts(), shared with the replay.  Nothing else changed.
--

CREATE TABLE mt5credit.webhook_event_replay (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id      bigint      NOT NULL REFERENCES mt5credit.webhook_event (id),
    replayed_by   text        NOT NULL DEFAULT session_user,
    replayed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    reason        text        NOT NULL
                  CHECK (length(btrim(reason)) BETWEEN 1 AND 2000),
    -- set when a reconciliation run replayed it (sql/040)
    recon_run_id  bigint,
    outcome       text        NOT NULL
                  CHECK (outcome IN ('credit_created', 'already_credited',
                                     'case_opened', 'status_recorded',
                                     'ignored')),
    credit_id     bigint      REFERENCES mt5credit.mt5_credit (id),
    detail        text,
    CHECK (outcome NOT IN ('credit_created', 'already_credited')
           OR credit_id IS NOT NULL)
);

COMMENT ON TABLE mt5credit.webhook_event_replay IS
    'Each replay of a stored event through ingest''s rules: who, when, '
    'why, what came of it; append-only.';

CREATE INDEX webhook_event_replay_event_idx
    ON mt5credit.webhook_event_replay (event_id);

CREATE TRIGGER webhook_event_replay_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.webhook_event_replay
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


--
-- ingest_facts(): what one stored event says, acted on: each fact of it
-- (a payment, a reversal, a status) through its step, the strongest
-- disposition winning (a case above all).  `created`: a credit was made.
--
CREATE FUNCTION mt5credit.ingest_facts(p_provider text, p_type text,
    p_body jsonb, p_event bigint, p_event_id text,
    OUT disposition text, OUT credit_id bigint, OUT created boolean,
    OUT detail text)
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    f  payment_fact;
    s  ingest_step;
BEGIN
    disposition := 'ignored';
    created := false;

    FOR f IN SELECT * FROM stripe_facts(p_type, p_body)
             WHERE p_provider = 'stripe'
             UNION ALL
             SELECT * FROM standard_facts(p_type, p_body)
             WHERE p_provider <> 'stripe'
             UNION ALL
             SELECT * FROM status_facts(p_provider, p_type, p_body)
    LOOP
        IF f.action = 'ignore' THEN
            detail := f.note;
            CONTINUE;
        END IF;

        IF f.action = 'paid' THEN
            s := ingest_paid(p_provider, f, p_event);
        ELSIF f.action IN ('pending', 'failed', 'expired') THEN
            s := ingest_status(p_provider, f, p_event, p_event_id);
        ELSE
            s := ingest_reversal(p_provider, f, p_event);
        END IF;

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


-- 014's ingest(), its facts loop now ingest_facts()
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
    BEGIN
        v_body := convert_from(p_raw_body, 'UTF8')::jsonb;
    EXCEPTION
        WHEN invalid_text_representation OR character_not_in_repertoire
             OR untranslatable_character OR invalid_parameter_value
        THEN
            RETURN QUERY SELECT 'malformed'::text, NULL::bigint,
                                NULL::bigint, 'body is not UTF-8 JSON'::text;
            RETURN;
    END;

    IF jsonb_typeof(v_body) <> 'object' THEN
        RETURN QUERY SELECT 'malformed'::text, NULL::bigint, NULL::bigint,
                            'body is not a JSON object'::text;
        RETURN;
    END IF;

    v_id := coalesce(p_event_id, json_text(v_body->'id'));

    IF v_id IS NULL THEN
        RETURN QUERY SELECT 'malformed'::text, NULL::bigint, NULL::bigint,
                            'no event id (string "id", 1..255 bytes)'::text;
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


--
-- event_replay_as(): the replay itself, for a person or for a run.  The
-- event is locked, so two replays of it take turns; the credit's unique
-- key (provider, payment) does the rest.
--
CREATE FUNCTION mt5credit.event_replay_as(p_event bigint, p_reason text,
    p_run bigint)
RETURNS mt5credit.webhook_event_replay
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    e  webhook_event;
    x  record;
    r  webhook_event_replay;
BEGIN
    IF p_reason IS NULL OR btrim(p_reason) = '' THEN
        RAISE EXCEPTION 'a replay needs its reason' USING ERRCODE = 'MC040';
    END IF;

    SELECT * INTO e FROM webhook_event WHERE id = p_event FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no stored event %', p_event
            USING ERRCODE = 'MC041';
    END IF;

    PERFORM set_config('mt5credit.actor',
                       left('replay:' || session_user || ':' || e.provider
                            || ':' || e.provider_event_id, 200), true);

    -- the bytes were JSON when they were stored (ingest() parsed them)
    x := ingest_facts(e.provider, e.event_type,
                      convert_from(e.raw_body, 'UTF8')::jsonb, e.id,
                      e.provider_event_id);

    INSERT INTO webhook_event_replay (event_id, reason, recon_run_id,
                                      outcome, credit_id, detail)
    VALUES (e.id, p_reason, p_run, x.disposition, x.credit_id, x.detail)
    RETURNING * INTO r;

    RETURN r;
END
$$;


-- a person's replay: `mt5credit events replay ID --reason TEXT`
CREATE FUNCTION mt5credit.event_replay(p_event bigint, p_reason text)
RETURNS TABLE (replay_id bigint, outcome text, credit_id bigint,
               detail text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  webhook_event_replay;
BEGIN
    r := event_replay_as(p_event, p_reason, NULL);
    RETURN QUERY SELECT r.id, r.outcome, r.credit_id, r.detail;
END
$$;


--
-- events_list(): the stored events, newest first.  p_payment finds the
-- events whose bytes name a payment (a scan of the events since p_since:
-- give a since for a large store), or whose credit is that payment's.
--
CREATE FUNCTION mt5credit.events_list(p_provider text, p_type text,
    p_disposition text, p_payment text, p_since timestamptz,
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
      AND (p_payment IS NULL
           OR position(convert_to(p_payment, 'UTF8') IN e.raw_body) > 0
           OR e.credit_id IN (SELECT c.id FROM mt5_credit c
                              WHERE c.provider_payment_id = p_payment))
    ORDER BY e.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 10000)
$$;


-- event_show(): one event, its bytes as received, and what became of it
CREATE FUNCTION mt5credit.event_show(p_event bigint)
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
        'body_sha256', encode(e.body_sha256, 'hex'),
        'bytes', length(e.raw_body),
        'raw_body', convert_from(e.raw_body, 'UTF8'),
        'disposition', e.disposition, 'credit_id', e.credit_id,
        'detail', e.detail,
        'conflicts', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'id', k.id, 'body_sha256', encode(k.body_sha256, 'hex'),
                'received_at', k.received_at) ORDER BY k.id)
            FROM webhook_event_conflict k WHERE k.event_id = e.id), '[]'),
        'replays', coalesce((SELECT jsonb_agg(to_jsonb(r) - 'event_id'
                                              ORDER BY r.id)
            FROM webhook_event_replay r WHERE r.event_id = e.id), '[]'))
    FROM webhook_event e
    WHERE e.id = p_event
$$;


REVOKE ALL ON FUNCTION
    mt5credit.ingest_facts(text, text, jsonb, bigint, text),
    mt5credit.event_replay_as(bigint, text, bigint),
    mt5credit.event_replay(bigint, text),
    mt5credit.events_list(text, text, text, text, timestamptz, integer),
    mt5credit.event_show(bigint)
    FROM PUBLIC;

-- looking is for the desk and the readers; replaying is the desk's
GRANT EXECUTE ON FUNCTION
    mt5credit.events_list(text, text, text, text, timestamptz, integer),
    mt5credit.event_show(bigint)
    TO mt5credit_operator, mt5credit_reader;

GRANT EXECUTE ON FUNCTION mt5credit.event_replay(bigint, text)
    TO mt5credit_operator;
