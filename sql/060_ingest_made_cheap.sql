--
-- 060: ingest() made cheap, with the same behaviour.
--
-- Measured on a backend (pg_stat_statements with nested statements,
-- pg_stat_user_functions, perf), one paid Stripe event at a time, fsync
-- on: ingest() spent 0.94 ms, a lean function doing the same writes on
-- plain tables 0.19 ms.  Where the difference went, and what this file
-- does about it (docs/scaling.md has the figures before and after):
--
--   - The deposit was moved to succeeded by an AFTER INSERT trigger on
--     the credit, through deposit_observe(): a second lock of the row
--     ingest_paid() had just read, a transition lookup, two set_config()
--     calls and the UPDATE; then ingest_paid() ran its own UPDATE, which
--     matched nothing.  ingest_paid() is the only maker of deposit
--     credits: it now locks the deposit when it reads it and moves it in
--     one plain statement.  The trigger is dropped.
--   - The event row was written twice: inserted as 'ignored', then
--     updated with its credit.  ingest() now draws the credit's id first
--     and inserts the event already naming it; ingest_paid() makes the
--     credit under that id.  Only when the facts end otherwise (a case,
--     an ignored type, already credited) is the row updated, as before.
--     The event's foreign key to its credit is checked at commit for
--     this (DEFERRABLE INITIALLY DEFERRED): the same key, checked once.
--   - The credit's reference was generated with text || bigint, which
--     resolves to a SQL function the planner inlines by parsing its
--     source, for each branch, on every insert (38 us of an insert's
--     175).  With explicit casts it is textcat(): the same values, 13 us.
--   - The facts were a UNION ALL of three set-returning functions, the
--     other provider's among them; now the provider's own and the status
--     facts, one call each.
--   - The BEFORE INSERT trigger that lets a correction inherit its
--     original's withdrawal ran for every credit; it is now WHEN-guarded
--     to the corrections it is for.
--
-- Kept, measured: the subtransaction around the JSON cast costs 2 us
-- (PostgreSQL 15 has no error-free input check; it is what stores a
-- malformed body instead of failing the delivery forever), and every
-- CHECK, foreign key and index a constraint needs.
--
-- This file holds the current definitions of ingest() (six arguments;
-- 051's five-argument wrapper calls it), ingest_facts() and
-- ingest_paid().
--

-- --- the deposit is paid by ingest_paid() itself ----------------------------

DROP TRIGGER mt5_credit_deposit_paid ON mt5credit.mt5_credit;
DROP FUNCTION mt5credit.deposit_paid_by_credit();


-- --- 017's trigger, for corrections only -------------------------------------

DROP TRIGGER mt5_credit_inherit_withdrawal ON mt5credit.mt5_credit;
CREATE TRIGGER mt5_credit_inherit_withdrawal
    BEFORE INSERT ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.kind = 'correction' AND NEW.deposit_id IS NULL
          AND NEW.withdrawal_id IS NULL)
    EXECUTE FUNCTION mt5credit.credit_inherit_withdrawal();


-- --- the credit's reference: the same values, without an inlined function ---

-- PostgreSQL 15 cannot change a generated expression in place: the column
-- is made again (a rewrite of the table, in this migration's transaction)
-- and its unique key with it
ALTER TABLE mt5credit.mt5_credit DROP COLUMN reference;
ALTER TABLE mt5credit.mt5_credit ADD COLUMN reference text NOT NULL
    GENERATED ALWAYS AS (CASE
        WHEN kind = 'withdrawal' THEN 'wd:' || withdrawal_id::text
        WHEN kind = 'deposit' THEN 'dep:' || id::text
        WHEN kind = 'refund' THEN 'rfd:' || id::text
        WHEN kind = 'correction' THEN 'cor:' || id::text
        WHEN direction = 'debit' THEN 'cbk:' || id::text
        ELSE 'cbr:' || id::text
    END) STORED;
ALTER TABLE mt5credit.mt5_credit
    ADD CONSTRAINT mt5_credit_reference_key UNIQUE (reference);
COMMENT ON COLUMN mt5credit.mt5_credit.reference IS
    'The compact reference in the MT5 deal''s comment (dep:<id> for a '
    'deposit), derived from the row, unique.';


-- --- the event names its credit from the start ------------------------------

ALTER TABLE mt5credit.webhook_event
    ALTER CONSTRAINT webhook_event_credit_id_fkey
    DEFERRABLE INITIALLY DEFERRED;


-- --- 006's ingest_paid(), the deposit locked and paid in plain statements ---

DROP FUNCTION mt5credit.ingest_paid(text, mt5credit.payment_fact, bigint);

-- p_credit: the id the credit is made under, drawn by ingest() for the
-- event row it already wrote; NULL draws one here (a replay)
CREATE FUNCTION mt5credit.ingest_paid(p_provider text,
    f mt5credit.payment_fact, p_event bigint, p_credit bigint DEFAULT NULL)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_dep     deposit;
    v_id      bigint;
    v_other   bigint;
    v_case    bigint;
    v_rows    integer;
    v_saved   text;
BEGIN
    IF f.payment_key IS NULL OR f.amount_minor IS NULL
       OR f.currency IS NULL
    THEN
        v_case := open_case('unusable_event', 'medium',
                            'unusable_event:' || p_event,
                            jsonb_build_object('facts', to_jsonb(f)),
                            NULL, NULL, p_event);
        RETURN ('case_opened', NULL, 'paid event without payment id, '
                'integer amount or currency: case ' || v_case)::ingest_step;
    END IF;

    -- locked as it is read: a payment and a status report of one deposit
    -- are decided one after the other, and its status below is current
    SELECT * INTO v_dep FROM deposit WHERE reference = f.deposit_ref
    FOR UPDATE;

    IF NOT FOUND THEN
        v_case := open_case('unknown_deposit', 'high',
                            'unknown_deposit:' || p_provider || ':'
                                || f.payment_key,
                            jsonb_build_object('facts', to_jsonb(f)),
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
                                'facts', to_jsonb(f),
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

    INSERT INTO mt5_credit (id, kind, direction, deposit_id, provider,
                            provider_payment_id, mt5_server, mt5_login,
                            amount_minor, currency, paid_amount_minor,
                            paid_currency, fx_rate, fx_source, fx_at)
    OVERRIDING SYSTEM VALUE
    VALUES (coalesce(p_credit, nextval('mt5credit.mt5_credit_id_seq')),
            'deposit', 'credit', v_dep.id, p_provider, f.payment_key,
            v_dep.mt5_server, v_dep.mt5_login, v_dep.credit_amount_minor,
            v_dep.account_currency, f.amount_minor, f.currency,
            v_dep.fx_rate, v_dep.fx_source, v_dep.fx_at)
    ON CONFLICT DO NOTHING
    RETURNING id INTO v_id;

    IF v_id IS NOT NULL THEN
        -- the deposit is paid: forward from created or pending, under the
        -- lock held; from anywhere else deposit_observe() decides (already
        -- succeeded: unchanged; failed or closed: a conflict and its case)
        IF v_dep.status IN ('created', 'pending') THEN
            -- the history row's detail, as deposit_observe() writes it;
            -- the caller's own is put back after
            v_saved := current_setting('mt5credit.detail', true);
            PERFORM set_config('mt5credit.detail',
                jsonb_build_object('credit', v_id,
                                   'payment', f.payment_key,
                                   'source', 'credit:' || v_id)::text, true);
            UPDATE deposit SET status = 'succeeded', updated_at = now()
            WHERE id = v_dep.id AND status = v_dep.status;
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            PERFORM set_config('mt5credit.detail', coalesce(v_saved, ''),
                               true);
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'deposit % moved under a lock', v_dep.id
                    USING ERRCODE = 'MC053';
            END IF;
        ELSE
            PERFORM deposit_observe(v_dep.id, 'succeeded', 'credit:' || v_id,
                                    jsonb_build_object('credit', v_id,
                                        'payment', f.payment_key));
        END IF;

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
                            jsonb_build_object('facts', to_jsonb(f),
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
                        jsonb_build_object('facts', to_jsonb(f),
                                           'credited_by', v_id),
                        v_id, v_dep.id, p_event);
    RETURN ('case_opened', NULL, 'deposit ' || v_dep.reference
            || ' was already credited by another payment: case '
            || v_case)::ingest_step;
END
$$;


-- --- 039's ingest_facts(), one call per kind of facts -----------------------

DROP FUNCTION mt5credit.ingest_facts(text, text, jsonb, bigint, text);

-- p_credit: the id a paid fact's credit is made under (ingest_paid()),
-- for the first paid fact; NULL for a replay
CREATE FUNCTION mt5credit.ingest_facts(p_provider text, p_type text,
    p_body jsonb, p_event bigint, p_event_id text,
    p_credit bigint DEFAULT NULL,
    OUT disposition text, OUT credit_id bigint, OUT created boolean,
    OUT detail text)
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_facts  payment_fact[];
    f        payment_fact;
    s        ingest_step;
BEGIN
    disposition := 'ignored';
    created := false;

    -- the provider's own facts first, then its status facts, as before
    IF p_provider = 'stripe' THEN
        v_facts := ARRAY(SELECT x FROM stripe_facts(p_type, p_body) x);
    ELSE
        v_facts := ARRAY(SELECT x FROM standard_facts(p_type, p_body) x);
    END IF;
    v_facts := v_facts
               || ARRAY(SELECT x FROM status_facts(p_provider, p_type,
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


-- --- 051's ingest(), the event written once when it makes its credit -------

CREATE OR REPLACE FUNCTION mt5credit.ingest(p_provider text, p_event_id text,
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
    v_credit    bigint;
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

    -- the event is written as what most events are, the maker of the
    -- credit drawn here; facts that end otherwise update it below.  A
    -- drawn id no credit takes is a gap, as a rolled back insert leaves.
    v_credit := nextval('mt5credit.mt5_credit_id_seq');

    INSERT INTO webhook_event (provider, provider_event_id, event_type,
                               raw_body, body_sha256, signature_scheme,
                               signed_at, disposition, credit_id, request_id)
    VALUES (p_provider, v_id, v_type, p_raw_body, v_sha, p_scheme,
            to_timestamp(p_signed_at), 'credit_created', v_credit, v_rid)
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

    x := ingest_facts(p_provider, v_type, v_body, v_row, v_id, v_credit);

    -- written as it ended, unless it ended as written
    IF x.disposition IS DISTINCT FROM 'credit_created'
       OR x.credit_id IS DISTINCT FROM v_credit
       OR x.detail IS NOT NULL
    THEN
        UPDATE webhook_event
        SET disposition = x.disposition, credit_id = x.credit_id,
            detail = x.detail
        WHERE id = v_row;
    END IF;

    RETURN QUERY SELECT CASE
                        WHEN x.created THEN 'credit_created'
                        WHEN x.disposition = 'case_opened' THEN 'case_opened'
                        ELSE 'stored' END,
                        x.credit_id, v_row, x.detail;
END
$$;
