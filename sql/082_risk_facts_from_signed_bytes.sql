--
-- 082: three deposit rules judged on what the provider signed: the payer's
-- name, the card, and the provider's own risk signal (issue 33; docs/risk.md
-- "The rules").
--
--   payer_name        the name the payer gave the provider is not the
--                     client's name on file (or the client has none)
--   first_instrument  no deposit of the client has been credited with this
--                     card (the provider's fingerprint of it) yet
--   provider_signal   the provider flagged the payment itself (Stripe's
--                     outcome.risk_level elevated or highest, Checkout.com's
--                     risk.flagged)
--
-- Only signed bytes count.  Each fact is read by a JSON path of its format
-- (payload_risk), from the body the edge verified before anything read
-- it.  Adyen signs a notification's named fields only (077), and its
-- holder's name, card and fraud score are in additionalData, which anybody
-- could have written: no path of an Adyen format is representable here.
--
-- The facts are read as the credit is made, into three columns of the
-- credit (its evidence, never changed), and only while a rule that judges
-- them is in force: a payer's name is personal data, kept where a rule
-- needs it and nowhere else.  So a card is "new" from the day
-- first_instrument comes into force.  risk_check(), the one judge, reads
-- them like every other rule; an event that carries no such fact is not
-- judged by the rule (no fact is not a mismatch), and docs/providers.md
-- says which events carry which.
--
-- The client's name is the broker's, from its KYC: the portal records it
-- with client_name_set(), as it records the logins (register_account()).
-- Names are compared by their words (case, accents, punctuation, order
-- and middle names aside; names_match()).
--
-- Re-declared, this file holds their current definitions:
--   ingest_paid()         (060's: the risk facts, p_risk)
--   ingest_facts()        (076's: reads the risk facts of a paid fact)
--   ingest_batch()        (076's: the same, for its one-statement path)
--   risk_check()          (080's: the three rules)
--   risk_rule_propose()   (080's: their names)
--   risk_rule's and risk_rule_change's rule checks (080's)
--

-- 1. the rules' names ----------------------------------------------------

ALTER TABLE mt5credit.risk_rule_change
    DROP CONSTRAINT risk_rule_change_rule_check,
    ADD CONSTRAINT risk_rule_change_rule_check
        CHECK (rule IN ('credit_amount', 'login_count_24h', 'login_sum_24h',
                        'client_count_24h', 'client_sum_24h',
                        'first_deposit', 'first_provider',
                        'payer_name', 'first_instrument', 'provider_signal',
                        'withdrawal_amount', 'withdrawal_trading'));

-- 2. the client's name, as the broker knows it ------------------------------

-- a name's words: lower case, accents off (NFKD, then no combining
-- marks), split at anything not a letter, each once, sorted
CREATE FUNCTION mt5credit.name_words(p_name text)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(array_agg(DISTINCT w ORDER BY w), '{}')
    FROM regexp_split_to_table(
             regexp_replace(normalize(lower(p_name), NFKD),
                            '[\u0300-\u036f]', '', 'g'),
             '[^[:alpha:]]+') w
    WHERE w <> ''
$$;

-- The same person: the same words, or all of one name's words in the
-- other's and at least two of them ("Maria Garcia" is "María José García
-- López"; "Garcia" alone is anybody's)
CREATE FUNCTION mt5credit.names_match(p_a text, p_b text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT a = b
           OR (cardinality(a) >= 2 AND a <@ b)
           OR (cardinality(b) >= 2 AND b <@ a)
    FROM (SELECT mt5credit.name_words(p_a) AS a,
                 mt5credit.name_words(p_b) AS b) n
$$;

CREATE TABLE mt5credit.client_name (
    client_id   text PRIMARY KEY
                CHECK (length(client_id) BETWEEN 1 AND 128),
    name        text NOT NULL
                CHECK (length(name) BETWEEN 1 AND 200
                       AND cardinality(mt5credit.name_words(name)) > 0),
    set_at      timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mt5credit.client_name IS
    'A client''s legal name as the broker''s KYC holds it, recorded by the '
    'portal (082); the payer_name rule compares a payment''s signed payer '
    'name with it.';

-- the portal's, as register_account(): the name it verified for a client
CREATE FUNCTION mt5credit.client_name_set(p_client text, p_name text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF p_name IS NULL OR length(p_name) NOT BETWEEN 1 AND 200
       OR cardinality(name_words(p_name)) = 0
    THEN
        RAISE EXCEPTION 'client %: a name needs letters, at most 200 '
                        'characters', coalesce(p_client, '')
            USING ERRCODE = 'MC048';
    END IF;
    INSERT INTO client_name (client_id, name) VALUES (p_client, p_name)
    ON CONFLICT (client_id)
        DO UPDATE SET name = excluded.name, set_at = now();
END
$$;

-- 3. where a format's events carry the facts ------------------------------

CREATE TABLE mt5credit.payload_risk (
    payload      text NOT NULL REFERENCES mt5credit.payload_format
                 -- Adyen signs an item's named fields only (077)
                 CHECK (payload NOT IN ('adyen', 'adyen_manual')),
    event_type   text NOT NULL CHECK (length(event_type) BETWEEN 1 AND 255),
    payer_name   jsonpath CHECK (payer_name::text LIKE 'strict %'),
    instrument   jsonpath CHECK (instrument::text LIKE 'strict %'),
    -- the field the provider flags in, and the values that are a flag
    signal       jsonpath CHECK (signal::text LIKE 'strict %'),
    signal_when  text[] CHECK (cardinality(signal_when) > 0),
    PRIMARY KEY (payload, event_type),
    CHECK ((signal IS NULL) = (signal_when IS NULL)),
    CHECK (payer_name IS NOT NULL OR instrument IS NOT NULL
           OR signal IS NOT NULL)
);

COMMENT ON TABLE mt5credit.payload_risk IS
    'Where a format''s paid events carry the payer''s name, the card''s '
    'fingerprint and the provider''s risk flag (082), for the risk rules.';

INSERT INTO mt5credit.payload_risk (payload, event_type, payer_name,
                                    instrument, signal, signal_when)
VALUES
    -- a Checkout Session names its customer; the card is the
    -- PaymentIntent's
    ('stripe', 'checkout.session.completed',
     'strict $.data.object.customer_details.name', NULL, NULL, NULL),
    ('stripe', 'checkout.session.async_payment_succeeded',
     'strict $.data.object.customer_details.name', NULL, NULL, NULL),
    -- a PaymentIntent carries its charge where the account's API version
    -- is older than 2022-11-15; newer ones carry none of the three
    ('stripe', 'payment_intent.succeeded',
     'strict $.data.object.charges.data[0].billing_details.name',
     'strict $.data.object.charges.data[0].payment_method_details.card'
         '.fingerprint',
     'strict $.data.object.charges.data[0].outcome.risk_level',
     '{elevated,highest}'),
    ('checkout', 'payment_captured', 'strict $.data.source.name',
     'strict $.data.source.fingerprint', 'strict $.data.risk.flagged',
     '{true}'),
    ('generic', 'payment.succeeded', 'strict $.data.payer_name',
     'strict $.data.instrument', 'strict $.data.risk', '{hold,high}');

-- a string or a boolean as text; anything else is no fact
CREATE FUNCTION mt5credit.risk_value(p jsonb, p_max integer)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN jsonb_typeof(p) = 'boolean' THEN p #>> '{}'
                WHEN jsonb_typeof(p) = 'string'
                     AND length(p #>> '{}') BETWEEN 1 AND p_max
                THEN p #>> '{}' END
$$;

CREATE TYPE mt5credit.risk_fact AS (
    payer_name       text,
    instrument       text,
    provider_signal  text
);

-- What a paid event signed of its payer, card and risk, for the rules in
-- force: a fact no rule judges is not read (nor kept)
CREATE FUNCTION mt5credit.risk_facts(p_provider text, p_type text,
                                     p_body jsonb)
RETURNS mt5credit.risk_fact
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p        payload_risk;
    v_rules  text[];
    v_sig    text;
    v_out    risk_fact;
BEGIN
    -- the rules that read these facts, in one look
    SELECT array_agg(r.rule) INTO v_rules FROM risk_rule r
    WHERE r.rule IN ('payer_name', 'first_instrument', 'provider_signal');
    IF v_rules IS NULL THEN
        RETURN NULL;
    END IF;

    SELECT * INTO p FROM payload_risk k
    WHERE k.payload = coalesce((SELECT x.payload FROM provider_payload x
                                WHERE x.provider = p_provider), 'generic')
      AND k.event_type = p_type;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;

    IF 'payer_name' = ANY (v_rules) THEN
        v_out.payer_name := risk_value(payload_value(p_body, p.payer_name),
                                       200);
    END IF;
    IF 'first_instrument' = ANY (v_rules) THEN
        v_out.instrument := risk_value(payload_value(p_body, p.instrument),
                                       128);
    END IF;
    IF 'provider_signal' = ANY (v_rules) THEN
        v_sig := risk_value(payload_value(p_body, p.signal), 64);
        IF v_sig = ANY (p.signal_when) THEN
            v_out.provider_signal := v_sig;
        END IF;
    END IF;
    RETURN v_out;
END
$$;

-- is any rule that reads them in force: a batch asks once
CREATE FUNCTION mt5credit.risk_facts_wanted()
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM risk_rule r
                   WHERE r.rule IN ('payer_name', 'first_instrument',
                                    'provider_signal'))
$$;

-- 4. on the credit: its evidence, written once ------------------------------

ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN payer_name text CHECK (length(payer_name) BETWEEN 1 AND 200),
    ADD COLUMN instrument text CHECK (length(instrument) BETWEEN 1 AND 128),
    ADD COLUMN provider_signal text
        CHECK (length(provider_signal) BETWEEN 1 AND 64),
    ADD CONSTRAINT mt5_credit_risk_facts_deposit
        CHECK (kind = 'deposit' OR (payer_name IS NULL AND instrument IS NULL
                                    AND provider_signal IS NULL));

COMMENT ON COLUMN mt5credit.mt5_credit.payer_name IS
    'The payer''s name as the provider signed it (082), read only while the '
    'payer_name rule is in force.  Never changes.';
COMMENT ON COLUMN mt5credit.mt5_credit.instrument IS
    'The provider''s fingerprint of the card (082), read only while '
    'first_instrument is in force.  Never changes.';
COMMENT ON COLUMN mt5credit.mt5_credit.provider_signal IS
    'The provider''s own risk flag on the payment (082), read only while '
    'provider_signal is in force.  Never changes.';

CREATE FUNCTION mt5credit.credit_risk_facts_fixed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'credit %: what the provider signed of it never changes',
                    OLD.id
        USING ERRCODE = 'MC011';
END
$$;

CREATE TRIGGER mt5_credit_risk_facts_fixed
    BEFORE UPDATE OF payer_name, instrument, provider_signal
    ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN ((OLD.payer_name, OLD.instrument, OLD.provider_signal)
          IS DISTINCT FROM (NEW.payer_name, NEW.instrument,
                            NEW.provider_signal))
    EXECUTE FUNCTION mt5credit.credit_risk_facts_fixed();

-- a client's cards, for first_instrument: from the card to its credits
CREATE INDEX mt5_credit_instrument_idx ON mt5credit.mt5_credit (instrument)
    WHERE instrument IS NOT NULL;

-- 5. the rules: proposed by their names -----------------------------------

CREATE OR REPLACE FUNCTION mt5credit.risk_rule_propose(p_rule text,
    p_currency text, p_provider text, p_limit text, p_remove boolean,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $_$
DECLARE
    v_minor   bigint;
    v_count   integer;
    v_volume  bigint;
    v_id      bigint;
BEGIN
    IF coalesce(p_remove, false) THEN
        IF p_limit IS NOT NULL THEN
            RAISE EXCEPTION 'removing a rule takes no limit'
                USING ERRCODE = 'MC048';
        END IF;
        IF NOT EXISTS (SELECT 1 FROM risk_rule r
                       WHERE r.rule = p_rule
                         AND r.currency IS NOT DISTINCT FROM p_currency
                         AND r.provider IS NOT DISTINCT FROM p_provider)
        THEN
            RAISE EXCEPTION 'no rule % for currency % and provider % to '
                            'remove', p_rule, coalesce(p_currency, 'any'),
                            coalesce(p_provider, 'any')
                USING ERRCODE = 'MC048';
        END IF;
    ELSIF p_rule IN ('credit_amount', 'login_sum_24h', 'client_sum_24h',
                     'withdrawal_amount')
    THEN
        v_minor := exact_minor(p_limit, p_currency, 'rule ' || p_rule,
                               '5000.00');
    ELSIF p_rule IN ('login_count_24h', 'client_count_24h') THEN
        IF p_limit IS NULL OR p_limit !~ '^[1-9][0-9]{0,5}$' THEN
            RAISE EXCEPTION 'rule % needs a count like 3, not "%"',
                            p_rule, coalesce(p_limit, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_count := p_limit::integer;
    ELSIF p_rule = 'withdrawal_trading' THEN
        v_volume := exact_volume(p_limit, 'rule ' || p_rule);
    ELSIF p_rule IN ('first_deposit', 'first_provider', 'payer_name',
                     'first_instrument', 'provider_signal')
    THEN
        IF p_limit IS NOT NULL THEN
            RAISE EXCEPTION 'rule % takes no limit', p_rule
                USING ERRCODE = 'MC048';
        END IF;
    ELSE
        RAISE EXCEPTION 'no risk rule "%"', coalesce(p_rule, '')
            USING ERRCODE = 'MC048';
    END IF;

    INSERT INTO risk_rule_change (rule, currency, provider, limit_minor,
                                  limit_count, limit_volume, remove, note,
                                  proposed_by)
    VALUES (p_rule, p_currency, p_provider, v_minor, v_count, v_volume,
            coalesce(p_remove, false), p_note, mt5credit.person())
    RETURNING id INTO v_id;
    RETURN v_id;
END
$_$;

-- 6. judged with the others -------------------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.risk_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r         risk_rule;
    v_client  text;
    v_since   timestamptz := now() - interval '24 hours';
    v_n       bigint;
    v_sum     numeric;
    v_trips   jsonb := '[]';
    v_name    text;
    v_read    text[] := '{}';     -- the signed facts a rule judged
BEGIN
    -- no rule for this credit, nothing to judge: ingest pays one probe
    IF NOT EXISTS (SELECT 1 FROM risk_rule k
                   WHERE k.rule NOT IN ('withdrawal_amount',
                                        'withdrawal_trading')
                     AND (k.currency IS NULL OR k.currency = NEW.currency)
                     AND (k.provider IS NULL OR k.provider = NEW.provider))
    THEN
        NEW.payer_name := NULL;      -- kept only where a rule judges it
        NEW.instrument := NULL;
        NEW.provider_signal := NULL;
        RETURN NEW;
    END IF;

    SELECT d.client_id INTO STRICT v_client
    FROM deposit d WHERE d.id = NEW.deposit_id;

    -- a client's deposits are judged one at a time, each seeing the last
    PERFORM pg_advisory_xact_lock(
        hashtextextended('mt5credit.risk:' || v_client, 0));

    FOR r IN
        SELECT * FROM risk_rule k
        WHERE k.rule NOT IN ('withdrawal_amount', 'withdrawal_trading')
          AND (k.currency IS NULL OR k.currency = NEW.currency)
          AND (k.provider IS NULL OR k.provider = NEW.provider)
        ORDER BY k.rule, k.id
    LOOP
        IF r.rule = 'credit_amount' THEN
            IF NEW.amount_minor > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, NEW.amount_minor, NULL);
            END IF;

        ELSIF r.rule IN ('login_count_24h', 'login_sum_24h') THEN
            -- this credit and the login's others of the last 24 hours
            -- that were not refused
            SELECT count(*) + 1, coalesce(sum(c.amount_minor), 0)
                                 + NEW.amount_minor
            INTO v_n, v_sum
            FROM mt5_credit c
            WHERE c.mt5_server = NEW.mt5_server
              AND c.mt5_login = NEW.mt5_login
              AND c.kind = 'deposit' AND c.status <> 'failed'
              AND c.created_at > v_since
              AND (r.currency IS NULL OR c.currency = r.currency)
              AND (r.provider IS NULL OR c.provider = r.provider);
            IF r.rule = 'login_count_24h' AND v_n > r.limit_count THEN
                v_trips := v_trips || risk_trip(r, v_n,
                    jsonb_build_object('since', v_since));
            ELSIF r.rule = 'login_sum_24h' AND v_sum > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, v_sum,
                    jsonb_build_object('since', v_since, 'count', v_n));
            END IF;

        ELSIF r.rule IN ('client_count_24h', 'client_sum_24h') THEN
            -- from the client's deposits to their credits, never the
            -- other way (the day's every credit): OFFSET 0 keeps the
            -- planner from turning it round
            SELECT count(*) + 1, coalesce(sum(c.amount_minor), 0)
                                 + NEW.amount_minor
            INTO v_n, v_sum
            FROM deposit d
            CROSS JOIN LATERAL (
                SELECT k.amount_minor FROM mt5_credit k
                WHERE k.deposit_id = d.id AND k.kind = 'deposit'
                  AND k.status <> 'failed' AND k.created_at > v_since
                  AND (r.currency IS NULL OR k.currency = r.currency)
                  AND (r.provider IS NULL OR k.provider = r.provider)
                OFFSET 0) c
            WHERE d.client_id = v_client;
            IF r.rule = 'client_count_24h' AND v_n > r.limit_count THEN
                v_trips := v_trips || risk_trip(r, v_n,
                    jsonb_build_object('since', v_since, 'client', v_client));
            ELSIF r.rule = 'client_sum_24h' AND v_sum > r.limit_minor THEN
                v_trips := v_trips || risk_trip(r, v_sum,
                    jsonb_build_object('since', v_since, 'count', v_n,
                                       'client', v_client));
            END IF;

        ELSIF r.rule IN ('first_deposit', 'first_provider') THEN
            -- first: no deposit of the client has been credited yet (by
            -- this provider); a held or queued one does not count, so a
            -- second deposit made while the first waits is held too
            IF NOT EXISTS (
                SELECT 1 FROM deposit d
                CROSS JOIN LATERAL (
                    SELECT 1 FROM mt5_credit k
                    WHERE k.deposit_id = d.id AND k.kind = 'deposit'
                      AND k.status = 'done'
                      AND (r.rule = 'first_deposit'
                           OR k.provider = NEW.provider)
                    OFFSET 0) c
                WHERE d.client_id = v_client)
            THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('client', v_client));
            END IF;

        ELSIF r.rule = 'payer_name' THEN
            -- 082: a payer the provider signed for who is not the client
            -- on file (or no name is on file); no signed name, no
            -- judgement
            v_read := v_read || 'payer_name'::text;
            IF NEW.payer_name IS NOT NULL THEN
                SELECT n.name INTO v_name FROM client_name n
                WHERE n.client_id = v_client;
                IF v_name IS NULL OR NOT names_match(NEW.payer_name, v_name)
                THEN
                    v_trips := v_trips || risk_trip(r, NULL,
                        jsonb_build_object('client', v_client,
                                           'payer_name', NEW.payer_name,
                                           'client_name', v_name));
                END IF;
            END IF;

        ELSIF r.rule = 'first_instrument' THEN
            -- 082: a card (this provider's fingerprint of it) that none
            -- of the client's credited deposits was paid with
            v_read := v_read || 'instrument'::text;
            IF NEW.instrument IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM mt5_credit k
                JOIN deposit d ON d.id = k.deposit_id
                WHERE k.instrument = NEW.instrument
                  AND k.provider = NEW.provider AND k.kind = 'deposit'
                  AND k.status = 'done' AND d.client_id = v_client)
            THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('client', v_client,
                                       'instrument', NEW.instrument));
            END IF;

        ELSIF r.rule = 'provider_signal' THEN
            -- 082: the provider flagged the payment itself
            v_read := v_read || 'provider_signal'::text;
            IF NEW.provider_signal IS NOT NULL THEN
                v_trips := v_trips || risk_trip(r, NULL,
                    jsonb_build_object('signal', NEW.provider_signal));
            END IF;
        END IF;
    END LOOP;

    -- a signed fact no rule of this credit judged is not kept
    IF NOT 'payer_name' = ANY (v_read) THEN
        NEW.payer_name := NULL;
    END IF;
    IF NOT 'instrument' = ANY (v_read) THEN
        NEW.instrument := NULL;
    END IF;
    IF NOT 'provider_signal' = ANY (v_read) THEN
        NEW.provider_signal := NULL;
    END IF;

    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := v_trips;
    END IF;
    RETURN NEW;
END
$$;

-- 7. the facts read as the credit is made -----------------------------------

-- 060's ingest_paid(), the credit carrying what its event signed (p_risk)
DROP FUNCTION mt5credit.ingest_paid(text, mt5credit.payment_fact, bigint,
                                    bigint);

-- p_credit: the id the credit is made under, drawn by ingest() for the
-- event row it already wrote; NULL draws one here (a replay)
CREATE FUNCTION mt5credit.ingest_paid(p_provider text,
    f mt5credit.payment_fact, p_event bigint, p_credit bigint DEFAULT NULL,
    p_risk mt5credit.risk_fact DEFAULT NULL)
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
                            paid_currency, fx_rate, fx_source, fx_at,
                            payer_name, instrument, provider_signal)
    OVERRIDING SYSTEM VALUE
    VALUES (coalesce(p_credit, nextval('mt5credit.mt5_credit_id_seq')),
            'deposit', 'credit', v_dep.id, p_provider, f.payment_key,
            v_dep.mt5_server, v_dep.mt5_login, v_dep.credit_amount_minor,
            v_dep.account_currency, f.amount_minor, f.currency,
            v_dep.fx_rate, v_dep.fx_source, v_dep.fx_at,
            p_risk.payer_name, p_risk.instrument, p_risk.provider_signal)
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

-- 076's, the paid fact's risk facts read once (082)
CREATE OR REPLACE FUNCTION mt5credit.ingest_facts(p_provider text, p_type text, p_body jsonb, p_event bigint, p_event_id text, p_credit bigint DEFAULT NULL::bigint, OUT disposition text, OUT credit_id bigint, OUT created boolean, OUT detail text) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_facts  payment_fact[];
    f        payment_fact;
    s        ingest_step;
    v_risk   risk_fact;
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
            -- what it signed of its payer, for the rules in force (082)
            IF v_risk IS NULL THEN
                v_risk := risk_facts(p_provider, p_type, p_body);
            END IF;
            s := ingest_paid(p_provider, f, p_event, p_credit, v_risk);
            p_credit := NULL;
        ELSIF f.action IN ('pending', 'failed', 'expired') THEN
            s := ingest_status(p_provider, f, p_event, p_event_id);
        ELSIF f.action = 'review' THEN
            s := ingest_review(p_provider, f, p_event);
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

-- 076's, the same for its one statement (082)
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
    v_risk      risk_fact[];         -- per element: its payer, card, flag
    v_want      boolean;             -- a rule reads them (082)
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
    v_risk := array_fill(NULL::risk_fact, ARRAY[n]);
    v_want := risk_facts_wanted();

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
            SELECT coalesce(p_event_id[i], e.event_id), e.event_type
            INTO v_id, v_type
            FROM payload_event(p_provider[i], v_body) e;
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
            IF v_want THEN
                v_risk[i] := risk_facts(p_provider[i], v_type, v_body);
            END IF;
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
                           (v_fact[j]).currency AS currency,
                           (v_risk[j]).payer_name AS payer_name,
                           (v_risk[j]).instrument AS instrument,
                           (v_risk[j]).provider_signal AS provider_signal
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
                        paid_currency, fx_rate, fx_source, fx_at,
                        payer_name, instrument, provider_signal)
                    OVERRIDING SYSTEM VALUE
                    SELECT s.credit, 'deposit', 'credit', d.id, s.provider,
                           s.payment, d.mt5_server, d.mt5_login,
                           d.credit_amount_minor, d.account_currency,
                           s.amount, s.currency, d.fx_rate, d.fx_source,
                           d.fx_at, s.payer_name, s.instrument,
                           s.provider_signal
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


REVOKE ALL ON FUNCTION mt5credit.name_words(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.names_match(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.client_name_set(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_value(jsonb, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_facts(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_facts_wanted() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.credit_risk_facts_fixed() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.ingest_paid(text, mt5credit.payment_fact,
                                             bigint, bigint,
                                             mt5credit.risk_fact)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION mt5credit.client_name_set(text, text)
    TO mt5credit_portal;
