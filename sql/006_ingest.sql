--
-- 006: ingest(): from a verified webhook to at most one credit intent.
--
-- The nginx edge calls this once per verified delivery, in one round trip
-- and one transaction; it answers the provider 2xx only after this commits.
-- The edge has verified the signature on the raw bytes; everything that
-- needs the content (event id, type, amounts) is read here, after that.
--
-- Two keys, two jobs (see docs/providers.md):
--   (provider, provider event id)   one delivery is processed once;
--   (provider, provider payment id) two events about one payment make
--                                   one credit.
--
-- Outcomes returned to the edge:
--   credit_created  at least one credit intent was created (wake a worker)
--   stored          stored; nothing to do, or already credited
--   case_opened     stored; a person must look (amount mismatch, ...)
--   duplicate       this event id with these bytes was already stored
--   conflict        this event id was stored with other bytes: kept aside,
--                   a case opened, nothing overwritten
--   malformed       not a JSON object, or no usable event id: nothing stored
-- Everything but malformed is answered 200.

-- One movement of money an event asserts, independent of the provider.
CREATE TYPE mt5credit.payment_fact AS (
    action        text,    -- paid, refund, refund_total, chargeback,
                           -- chargeback_reversal, ignore
    payment_key   text,    -- provider key of the credit to create
    original_key  text,    -- refunds, chargebacks: the paid payment's key
    deposit_ref   text,    -- paid: our deposit reference
    amount_minor  bigint,  -- in currency's minor units; NULL if unusable
    currency      text,
    note          text
);

-- What one fact led to.
CREATE TYPE mt5credit.ingest_step AS (
    disposition   text,    -- as webhook_event.disposition
    credit_id     bigint,
    detail        text
);


--
-- An integer amount of minor units from JSON: a number or a string of
-- digits, nothing else (12.0, 1e2 as text, negative: NULL).
--
CREATE FUNCTION mt5credit.json_minor(p jsonb)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
           WHEN jsonb_typeof(p) = 'number' AND p::text ~ '^[0-9]{1,18}$'
               THEN p::text::bigint
           WHEN jsonb_typeof(p) = 'string' AND (p #>> '{}') ~ '^[0-9]{1,18}$'
               THEN (p #>> '{}')::bigint
           END
$$;


-- A JSON string, or NULL for anything else (numbers are not ids).
CREATE FUNCTION mt5credit.json_text(p jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(p) = 'string'
                 AND length(p #>> '{}') BETWEEN 1 AND 255
           THEN p #>> '{}' END
$$;


--
-- Stripe (docs/providers.md says why each event counts):
--   paid:        checkout.session.completed with payment_status paid,
--                checkout.session.async_payment_succeeded,
--                payment_intent.succeeded; keyed by the PaymentIntent id
--   refunded:    charge.refunded; one debit per listed refund object, or,
--                when the API version lists none, one per increase of the
--                charge's cumulative amount_refunded
--   charged back: charge.dispute.funds_withdrawn, or charge.dispute.closed
--                with status lost (same key: whichever comes first);
--                charge.dispute.funds_reinstated credits it back
--
CREATE FUNCTION mt5credit.stripe_facts(p_type text, p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    o    jsonb := p_body #> '{data,object}';
    r    jsonb;
    ref  text;
BEGIN
    IF jsonb_typeof(o) IS DISTINCT FROM 'object' THEN
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'no data.object')::payment_fact;
        RETURN;
    END IF;

    CASE p_type
    WHEN 'checkout.session.completed',
         'checkout.session.async_payment_succeeded'
    THEN
        IF o->>'payment_status' IS DISTINCT FROM 'paid' THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'payment_status is '
                         || coalesce(o->>'payment_status', 'absent')
                         || ': money not confirmed yet')::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'payment_intent'), NULL,
                     coalesce(json_text(o->'client_reference_id'),
                              json_text(o #> '{metadata,deposit_id}')),
                     json_minor(o->'amount_total'),
                     upper(json_text(o->'currency')),
                     'checkout session ' || coalesce(o->>'id', '?')
                    )::payment_fact;

    WHEN 'payment_intent.succeeded' THEN
        ref := json_text(o #> '{metadata,deposit_id}');

        IF o->>'status' IS DISTINCT FROM 'succeeded' OR ref IS NULL THEN
            -- a PaymentIntent made by Checkout carries no metadata unless
            -- the integration copies it; its checkout.session event will
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'PaymentIntent without metadata.deposit_id: '
                         'the checkout.session event credits it'
                        )::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('paid', json_text(o->'id'), NULL, ref,
                     json_minor(o->'amount_received'),
                     upper(json_text(o->'currency')),
                     'payment intent')::payment_fact;

    WHEN 'charge.refunded' THEN
        IF jsonb_typeof(o #> '{refunds,data}') = 'array' THEN
            FOR r IN SELECT * FROM jsonb_array_elements(o #> '{refunds,data}')
            LOOP
                CONTINUE WHEN r->>'status' IS DISTINCT FROM 'succeeded';

                RETURN NEXT ('refund', json_text(r->'id'),
                             json_text(o->'payment_intent'), NULL,
                             json_minor(r->'amount'),
                             upper(json_text(r->'currency')),
                             'refund of charge ' || coalesce(o->>'id', '?')
                            )::payment_fact;
            END LOOP;
            RETURN;
        END IF;

        RETURN NEXT ('refund_total',
                     json_text(o->'id') || ':refunded:'
                         || json_minor(o->'amount_refunded'),
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount_refunded'),
                     upper(json_text(o->'currency')),
                     'cumulative amount_refunded of charge '
                     || coalesce(o->>'id', '?'))::payment_fact;

    WHEN 'charge.dispute.funds_withdrawn', 'charge.dispute.closed' THEN
        IF p_type = 'charge.dispute.closed'
           AND o->>'status' IS DISTINCT FROM 'lost'
        THEN
            RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                         'dispute closed as '
                         || coalesce(o->>'status', 'absent'))::payment_fact;
            RETURN;
        END IF;

        RETURN NEXT ('chargeback', json_text(o->'id') || ':withdrawn',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute ' || coalesce(o->>'reason', ''))::payment_fact;

    WHEN 'charge.dispute.funds_reinstated' THEN
        RETURN NEXT ('chargeback_reversal', json_text(o->'id') || ':reinstated',
                     json_text(o->'payment_intent'), NULL,
                     json_minor(o->'amount'), upper(json_text(o->'currency')),
                     'dispute funds reinstated')::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;


--
-- The generic payload for PSPs and cashiers (docs/providers.md):
--   {"id": "...", "type": "payment.succeeded", "data": {"payment_id": "...",
--    "deposit_reference": "dep_000123", "amount_minor": 50000,
--    "currency": "USD"}}
-- payment.refunded (data.refund_id), payment.chargeback
-- (data.chargeback_id) and payment.chargeback_reversed name the paid
-- payment in data.payment_id.  Keys are prefixed by kind, so a PSP whose
-- refund and payment ids share one numbering cannot collide.
--
CREATE FUNCTION mt5credit.standard_facts(p_type text, p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    d       jsonb := p_body->'data';
    amount  bigint := json_minor(d->'amount_minor');
    cur     text := upper(json_text(d->'currency'));
    pay     text := json_text(d->'payment_id');
BEGIN
    CASE p_type
    WHEN 'payment.succeeded' THEN
        RETURN NEXT ('paid', pay, NULL, json_text(d->'deposit_reference'),
                     amount, cur, NULL)::payment_fact;

    WHEN 'payment.refunded' THEN
        RETURN NEXT ('refund', 'refund:' || json_text(d->'refund_id'), pay,
                     NULL, amount, cur, NULL)::payment_fact;

    WHEN 'payment.chargeback' THEN
        RETURN NEXT ('chargeback',
                     'chargeback:' || json_text(d->'chargeback_id'), pay,
                     NULL, amount, cur, NULL)::payment_fact;

    WHEN 'payment.chargeback_reversed' THEN
        RETURN NEXT ('chargeback_reversal',
                     'chargeback:' || json_text(d->'chargeback_id')
                         || ':reversed',
                     pay, NULL, amount, cur, NULL)::payment_fact;

    ELSE
        RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                     'event type not mapped')::payment_fact;
    END CASE;
END
$$;


--
-- A paid fact: one deposit credit, or a case saying why not.
--
CREATE FUNCTION mt5credit.ingest_paid(p_provider text, f mt5credit.payment_fact,
    p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_dep     deposit;
    v_id      bigint;
    v_other   bigint;
    v_case    bigint;
    v_facts   jsonb := to_jsonb(f);
BEGIN
    IF f.payment_key IS NULL OR f.amount_minor IS NULL
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, 'paid event without payment id, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    SELECT * INTO v_dep FROM deposit WHERE reference = f.deposit_ref;

    IF NOT FOUND THEN
        v_case := open_case('unknown_deposit', 'high',
                            'unknown_deposit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, 'no deposit '
                || coalesce(f.deposit_ref, '(none)') || ': case '
                || v_case)::ingest_step;
    END IF;

    IF v_dep.provider <> p_provider
       OR v_dep.amount_minor <> f.amount_minor
       OR v_dep.currency <> f.currency
    THEN
        v_case := open_case('amount_mismatch', 'high',
                            'amount_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object(
                                'facts', v_facts,
                                'deposit', jsonb_build_object(
                                    'reference', v_dep.reference,
                                    'provider', v_dep.provider,
                                    'amount_minor', v_dep.amount_minor,
                                    'currency', v_dep.currency)),
                            NULL, v_dep.id, p_event);
        RETURN ('case_opened', NULL, 'paid ' || f.amount_minor || ' '
                || f.currency || ' via ' || p_provider || ', deposit '
                || v_dep.reference || ' expects ' || v_dep.amount_minor
                || ' ' || v_dep.currency || ' via ' || v_dep.provider
                || ': case ' || v_case)::ingest_step;
    END IF;

    INSERT INTO mt5_credit (kind, direction, deposit_id, provider,
                            provider_payment_id, mt5_server, mt5_login,
                            amount_minor, currency, paid_amount_minor,
                            paid_currency, fx_rate, fx_source, fx_at)
    VALUES ('deposit', 'credit', v_dep.id, p_provider, f.payment_key,
            v_dep.mt5_server, v_dep.mt5_login, v_dep.credit_amount_minor,
            v_dep.account_currency, f.amount_minor, f.currency,
            v_dep.fx_rate, v_dep.fx_source, v_dep.fx_at)
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NOT NULL THEN
        -- forward only: a deposit never goes back from succeeded
        UPDATE deposit SET status = 'succeeded', updated_at = now()
        WHERE id = v_dep.id AND status IN ('created', 'pending');

        RETURN ('credit_created', v_id, NULL)::ingest_step;
    END IF;

    -- which key held: this payment, or another payment of the deposit?
    SELECT id, deposit_id INTO v_id, v_other
    FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.payment_key;

    IF FOUND AND v_other = v_dep.id THEN
        RETURN ('already_credited', v_id, NULL)::ingest_step;
    END IF;

    IF FOUND THEN
        -- one payment claimed for two deposits: credited once, and a
        -- person must see that the provider says otherwise
        v_case := open_case('payment_deposit_mismatch', 'high',
                            'payment_deposit_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                               'credited_deposit', v_other),
                            v_id, v_dep.id, p_event);
        RETURN ('case_opened', NULL, 'payment ' || f.payment_key
                || ' was credited to another deposit: case '
                || v_case)::ingest_step;
    END IF;

    SELECT id INTO v_id FROM mt5_credit
    WHERE deposit_id = v_dep.id AND kind = 'deposit';

    v_case := open_case('second_payment_for_deposit', 'high',
                        'second_payment:' || p_provider || ':'
                            || f.payment_key,
                        jsonb_build_object('facts', v_facts,
                                           'credited_by', v_id),
                        v_id, v_dep.id, p_event);
    RETURN ('case_opened', NULL, 'deposit ' || v_dep.reference
            || ' was already credited by another payment: case '
            || v_case)::ingest_step;
END
$$;


--
-- A refund or chargeback (debit), or a chargeback reversal (credit).
-- Linked to the deposit credit of the paid payment; the amount in the
-- account currency is that credit's amount, pro rata, with the rate the
-- credit used (never a new rate).  Serialized per original credit, so two
-- concurrent refund events cannot both take the same money.
--
CREATE FUNCTION mt5credit.ingest_reversal(p_provider text,
    f mt5credit.payment_fact, p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_orig       mt5_credit;
    v_id         bigint;
    v_case       bigint;
    v_kind       text;
    v_dir        text;
    v_amount     bigint := f.amount_minor;
    v_refunded   bigint;
    v_net_out    bigint;
    v_account    bigint;
    v_facts      jsonb := to_jsonb(f);
BEGIN
    IF f.payment_key IS NULL OR f.original_key IS NULL
       OR f.amount_minor IS NULL OR f.amount_minor <= 0
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' event without keys, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    SELECT * INTO v_orig FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.original_key
      AND kind = 'deposit'
    FOR UPDATE;

    IF NOT FOUND THEN
        v_case := open_case(f.action || '_without_credit', 'high',
                            'reversal_without_credit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || f.original_key
                || ', which has no credit: case ' || v_case)::ingest_step;
    END IF;

    -- already recorded under this key (a re-delivery by another event)?
    SELECT id INTO v_id FROM mt5_credit
    WHERE provider = p_provider AND provider_payment_id = f.payment_key;

    IF FOUND THEN
        RETURN ('already_credited', v_id, NULL)::ingest_step;
    END IF;

    IF f.currency <> v_orig.paid_currency THEN
        v_case := open_case('amount_mismatch', 'high',
                            'amount_mismatch:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'original_currency', v_orig.paid_currency),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' in ' || f.currency
                || ', payment was in ' || v_orig.paid_currency
                || ': case ' || v_case)::ingest_step;
    END IF;

    -- what already went back, in the paid currency
    SELECT coalesce(sum(paid_amount_minor)
                    FILTER (WHERE kind = 'refund'), 0),
           coalesce(sum(CASE direction WHEN 'debit' THEN paid_amount_minor
                                       ELSE -paid_amount_minor END), 0)
    INTO v_refunded, v_net_out
    FROM mt5_credit
    WHERE original_credit_id = v_orig.id;

    IF f.action = 'refund_total' THEN
        -- Stripe's cumulative amount_refunded: debit only the increase
        v_amount := f.amount_minor - v_refunded;

        IF v_amount <= 0 THEN
            RETURN ('ignored', NULL, 'cumulative refund ' || f.amount_minor
                    || ' already debited')::ingest_step;
        END IF;
    END IF;

    IF f.action = 'chargeback_reversal' THEN
        IF NOT EXISTS (SELECT 1 FROM mt5_credit
                       WHERE original_credit_id = v_orig.id
                         AND kind = 'chargeback' AND direction = 'debit')
           OR v_amount > v_net_out
        THEN
            v_case := open_case('chargeback_reversal_without_debit', 'high',
                                'reversal_without_debit:' || p_provider
                                    || ':' || f.payment_key,
                                jsonb_build_object('facts', v_facts),
                                v_orig.id, v_orig.deposit_id, p_event);
            RETURN ('case_opened', NULL, 'reinstatement without a matching '
                    'chargeback debit: case ' || v_case)::ingest_step;
        END IF;

    ELSIF v_net_out + v_amount > v_orig.paid_amount_minor THEN
        v_case := open_case('reversal_exceeds_payment', 'high',
                            'reversal_exceeds:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', v_facts,
                                'paid_amount_minor', v_orig.paid_amount_minor,
                                'already_reversed_minor', v_net_out),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, f.action || ' of ' || v_amount
                || ' would take back more than was paid: case '
                || v_case)::ingest_step;
    END IF;

    -- pro rata on the cumulative net amount taken back (refunds and
    -- chargebacks, less reinstatements), so rounding never drifts: the
    -- account has always lost round(credited * net / paid), and once all
    -- was taken back, by refunds, chargebacks or both, exactly the
    -- credited amount has gone back
    IF f.action = 'chargeback_reversal' THEN
        v_account := round(v_orig.amount_minor::numeric * v_net_out
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric
                             * (v_net_out - v_amount)
                             / v_orig.paid_amount_minor);
    ELSE
        v_account := round(v_orig.amount_minor::numeric
                           * (v_net_out + v_amount)
                           / v_orig.paid_amount_minor)
                     - round(v_orig.amount_minor::numeric * v_net_out
                             / v_orig.paid_amount_minor);
    END IF;

    IF v_account <= 0 THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', v_facts,
                                'converted_minor', v_account),
                            v_orig.id, v_orig.deposit_id, p_event);
        RETURN ('case_opened', NULL, 'converted amount is zero: case '
                || v_case)::ingest_step;
    END IF;

    v_kind := CASE WHEN f.action IN ('refund', 'refund_total') THEN 'refund'
                   ELSE 'chargeback' END;
    v_dir := CASE WHEN f.action = 'chargeback_reversal' THEN 'credit'
                  ELSE 'debit' END;

    INSERT INTO mt5_credit (kind, direction, original_credit_id, deposit_id,
                            provider, provider_payment_id, mt5_server,
                            mt5_login, amount_minor, currency,
                            paid_amount_minor, paid_currency, fx_rate,
                            fx_source, fx_at)
    VALUES (v_kind, v_dir, v_orig.id, v_orig.deposit_id, p_provider,
            f.payment_key, v_orig.mt5_server, v_orig.mt5_login, v_account,
            v_orig.currency, v_amount, v_orig.paid_currency, v_orig.fx_rate,
            v_orig.fx_source, v_orig.fx_at)
    RETURNING id INTO v_id;

    RETURN ('credit_created', v_id, NULL)::ingest_step;
END
$$;


--
-- The edge's one call.  p_event_id is the id the signature scheme carries
-- (Standard Webhooks' webhook-id), or NULL to take the body's top-level
-- "id" (Stripe, generic HMAC).  p_signed_at is the signature timestamp in
-- unix seconds, or NULL.
--
CREATE FUNCTION mt5credit.ingest(p_provider text, p_event_id text,
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
    LOOP
        IF f.action = 'ignore' THEN
            v_detail := f.note;
            CONTINUE;
        END IF;

        IF f.action = 'paid' THEN
            s := ingest_paid(p_provider, f, v_row);
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

REVOKE ALL ON FUNCTION mt5credit.ingest(text, text, bytea, text, bigint)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.ingest(text, text, bytea, text, bigint)
    TO mt5credit_ingest;
