--
-- 014: what a webhook says about a deposit that is not money.
--
-- A payment can fail, stay pending or expire.  Until now such events were
-- stored and ignored; now they move the deposit's own status (013),
-- through the same deposit_observe() the provider query path will use, so
-- both meet in one state machine.  Nothing here creates or changes a
-- credit: money moves only on a paid fact.  A failure reported after the
-- payment succeeded is a conflict with a case, never applied.
--
--   Stripe   checkout.session.completed, payment_status unpaid  -> pending
--            checkout.session.async_payment_failed             -> failed
--            checkout.session.expired                           -> expired
--            payment_intent.processing                          -> pending
--            payment_intent.payment_failed                      -> failed
--            payment_intent.canceled                            -> expired
--   generic  payment.pending, payment.failed, payment.expired
--
-- The deposit is found by our reference (client_reference_id or
-- metadata.deposit_id; the generic payload's deposit_reference), or by a
-- credit already made for the payment.
--

ALTER TABLE mt5credit.webhook_event
    DROP CONSTRAINT webhook_event_disposition_check,
    ADD CONSTRAINT webhook_event_disposition_check
        CHECK (disposition IN ('credit_created', 'already_credited',
                               'ignored', 'case_opened',
                               'status_recorded'));


-- the status facts of an event; the money facts stay in stripe_facts()
-- and standard_facts()
CREATE FUNCTION mt5credit.status_facts(p_provider text, p_type text,
    p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    o       jsonb;
    v_act   text;
BEGIN
    IF p_provider = 'stripe' THEN
        o := p_body #> '{data,object}';
        IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
            RETURN;
        END IF;

        v_act := CASE
            WHEN p_type = 'checkout.session.completed'
                 AND o->>'payment_status' = 'unpaid' THEN 'pending'
            WHEN p_type = 'checkout.session.async_payment_failed'
                THEN 'failed'
            WHEN p_type = 'checkout.session.expired' THEN 'expired'
            WHEN p_type = 'payment_intent.processing' THEN 'pending'
            WHEN p_type = 'payment_intent.payment_failed' THEN 'failed'
            WHEN p_type = 'payment_intent.canceled' THEN 'expired'
            END;
        IF v_act IS NULL THEN
            RETURN;
        END IF;

        RETURN NEXT (v_act,
                     CASE WHEN o->>'object' = 'payment_intent'
                          THEN json_text(o->'id')
                          ELSE json_text(o->'payment_intent') END,
                     NULL,
                     coalesce(json_text(o->'client_reference_id'),
                              json_text(o #> '{metadata,deposit_id}')),
                     NULL, upper(json_text(o->'currency')),
                     p_type)::payment_fact;
        RETURN;
    END IF;

    v_act := CASE p_type
        WHEN 'payment.pending' THEN 'pending'
        WHEN 'payment.failed' THEN 'failed'
        WHEN 'payment.expired' THEN 'expired'
        END;
    IF v_act IS NOT NULL THEN
        RETURN NEXT (v_act, json_text(p_body #> '{data,payment_id}'), NULL,
                     json_text(p_body #> '{data,deposit_reference}'), NULL,
                     upper(json_text(p_body #> '{data,currency}')),
                     p_type)::payment_fact;
    END IF;
END
$$;


--
-- A status fact: the deposit it names moves through deposit_observe().
-- Our reference first; else the deposit a credit for the payment was
-- made for.  A deposit of another provider is not this event's to move.
--
CREATE FUNCTION mt5credit.ingest_status(p_provider text,
    f mt5credit.payment_fact, p_event bigint, p_event_id text)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_dep      deposit;
    v_status   text := CASE f.action WHEN 'expired' THEN 'closed'
                                     ELSE f.action END;
    v_outcome  text;
BEGIN
    IF f.deposit_ref IS NOT NULL THEN
        SELECT * INTO v_dep FROM deposit WHERE reference = f.deposit_ref;
    ELSIF f.payment_key IS NOT NULL THEN
        SELECT d.* INTO v_dep FROM deposit d
        JOIN mt5_credit c ON c.deposit_id = d.id AND c.kind = 'deposit'
        WHERE c.provider = p_provider
          AND c.provider_payment_id = f.payment_key;
    END IF;

    IF v_dep.id IS NULL OR v_dep.provider <> p_provider THEN
        RETURN ('ignored', NULL, f.note || ': no deposit of ours to move'
                )::ingest_step;
    END IF;

    v_outcome := deposit_observe(v_dep.id, v_status,
        'webhook:' || p_provider || ':' || p_event_id,
        jsonb_build_object('event', p_event, 'type', f.note));

    IF v_outcome = 'conflict' THEN
        RETURN ('case_opened', NULL, 'deposit ' || v_dep.reference || ' is '
                || v_dep.status || '; ' || f.note || ' says ' || v_status
                || ': recorded as a conflict, not applied')::ingest_step;
    END IF;

    RETURN ('status_recorded', NULL, 'deposit ' || v_dep.reference || ': '
            || v_status || ' (' || v_outcome || ')')::ingest_step;
END
$$;


--
-- A deposit credit exists only because the deposit was paid: its
-- creation moves the deposit to succeeded through deposit_observe(),
-- from failed or closed too (the money is real).  006's own update only
-- knew created and pending.
--
CREATE FUNCTION mt5credit.deposit_paid_by_credit()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    PERFORM deposit_observe(NEW.deposit_id, 'succeeded',
                            'credit:' || NEW.id,
                            jsonb_build_object('credit', NEW.id,
                                               'payment', NEW.provider_payment_id));
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_deposit_paid
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW WHEN (NEW.kind = 'deposit')
    EXECUTE FUNCTION mt5credit.deposit_paid_by_credit();


--
-- ingest() again: the same function as in 006, which also hands status
-- facts to ingest_status().
--
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
    f           payment_fact;
    s           ingest_step;
    v_disp      text := 'ignored';
    v_credit    bigint;
    v_detail    text;
    v_created   boolean := false;
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

    FOR f IN SELECT * FROM stripe_facts(v_type, v_body)
             WHERE p_provider = 'stripe'
             UNION ALL
             SELECT * FROM standard_facts(v_type, v_body)
             WHERE p_provider <> 'stripe'
             UNION ALL
             SELECT * FROM status_facts(p_provider, v_type, v_body)
    LOOP
        IF f.action = 'ignore' THEN
            v_detail := f.note;
            CONTINUE;
        END IF;

        IF f.action = 'paid' THEN
            s := ingest_paid(p_provider, f, v_row);
        ELSIF f.action IN ('pending', 'failed', 'expired') THEN
            s := ingest_status(p_provider, f, v_row, v_id);
        ELSE
            s := ingest_reversal(p_provider, f, v_row);
        END IF;

        -- one event may carry several facts (a refund list): the strongest
        -- disposition wins, a case above all
        IF s.disposition = 'case_opened' THEN
            v_disp := 'case_opened';
        ELSIF s.disposition = 'credit_created' AND v_disp <> 'case_opened'
        THEN
            v_disp := 'credit_created';
        ELSIF s.disposition = 'already_credited' AND v_disp = 'ignored' THEN
            v_disp := 'already_credited';
        ELSIF s.disposition = 'status_recorded' AND v_disp = 'ignored' THEN
            v_disp := 'status_recorded';
        END IF;

        IF s.disposition = 'credit_created' THEN
            v_created := true;
        END IF;

        v_credit := coalesce(v_credit, s.credit_id);
        v_detail := coalesce(s.detail, v_detail);
    END LOOP;

    IF v_disp = 'case_opened' AND v_credit IS NOT NULL AND v_created THEN
        -- some facts made credits and some cases: both are recorded
        v_detail := v_detail || ' (and credit ' || v_credit || ' created)';
    END IF;

    UPDATE webhook_event
    SET disposition = v_disp, credit_id = v_credit, detail = v_detail
    WHERE id = v_row;

    RETURN QUERY SELECT CASE
                        WHEN v_created THEN 'credit_created'
                        WHEN v_disp = 'case_opened' THEN 'case_opened'
                        ELSE 'stored' END,
                        v_credit, v_row, v_detail;
END
$$;

