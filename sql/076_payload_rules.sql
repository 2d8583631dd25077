--
-- 076: what a provider's event means is data a person can review, and
-- Coinbase Commerce's own events are read as they come.
--
-- 075 made a provider's payload format data, but each format's meaning
-- was still PL/pgSQL (standard_facts(), checkout_facts()): adding a PSP
-- whose signature scheme the edge already verifies took a function.
-- Here a format is two tables of JSON paths (PostgreSQL's jsonpath, read
-- with jsonb_path_query_first()):
--
--   payload_format   where an event's id and type are, per format
--   payload_rule     per format and event type, the fact it is: paid,
--                    pending, failed, expired, refund, chargeback,
--                    chargeback_reversal, payout_status, review (a case
--                    for a person, never money) or ignore; and where its
--                    payment, original payment, deposit reference,
--                    amount (integer minor units, or a decimal string
--                    converted exactly by the currency's digits) and
--                    currency are.  The first rule of a type whose
--                    condition holds decides; no rule, no money.
--
-- Field paths are strict, by CHECK: lax mode would read a field out of
-- each element of an array, and put one fact together from several
-- objects.  A condition may be lax, and asks for what must be there, so
-- a missing field fails it.
--
-- The generic payload, Checkout.com's and Coinbase Commerce's are rows
-- here; their functions are dropped.  Stripe stays code (stripe_facts():
-- a refund list is several facts, and PaymentIntents and Checkout
-- Sessions name one payment two ways), and docs/providers.md says why.
--
-- Coinbase Commerce (docs/providers.md "Coinbase Commerce"): the event is
-- nested under "event" (the envelope's own "id" is the delivery's), so
-- the id and type are read through payload_event(), which ingest() and
-- ingest_batch() both call.  A charge credits only when it is confirmed,
-- paid once and in full: a charge paid late, short, over or more than
-- once says so in its timeline and payments, and each is a case.
--
-- Re-declared, this file holds their current definitions:
--   provider_payload.payload's check   (075's list, now payload_format)
--   payload_facts()            (075's: rules; Stripe still code)
--   ingest_facts()             (075's: the review fact)
--   ingest()                   (060's: id and type by payload_event())
--   ingest_batch()             (075's: the same)
--   program_answer_unvouched() (064's: through payload_facts(), as
--                               ingest() reads)
--

-- --- formats and their rules ------------------------------------------------

CREATE TABLE mt5credit.payload_format (
    payload     text PRIMARY KEY CHECK (payload ~ '^[a-z][a-z0-9_]{0,31}$'),
    -- field paths are strict: lax mode would read a field out of an
    -- array's elements, and one fact out of several objects
    event_id    jsonpath NOT NULL CHECK (event_id::text LIKE 'strict %'),
    event_type  jsonpath NOT NULL CHECK (event_type::text LIKE 'strict %'),
    -- the event inside a delivery, where a provider's retries of one
    -- event differ outside it (an attempt number): equal there, a
    -- delivery is the event again, not other bytes under its id
    event_part  jsonpath CHECK (event_part::text LIKE 'strict %'),
    about       text NOT NULL CHECK (length(about) BETWEEN 1 AND 500)
);

COMMENT ON TABLE mt5credit.payload_format IS
    'A provider payload format (076): where its events'' id and type are; '
    'payload_rule says what each type means';

INSERT INTO mt5credit.payload_format (payload, event_id, event_type,
                                      event_part, about)
VALUES ('stripe', 'strict $.id', 'strict $.type', NULL,
        'Stripe''s events: stripe_facts(), code (docs/providers.md)'),
       ('generic', 'strict $.id', 'strict $.type', NULL,
        'the generic payload, also every provider without a '
        'provider_payload row (docs/providers.md)'),
       ('checkout', 'strict $.id', 'strict $.type', NULL,
        'Checkout.com''s events (docs/providers.md)'),
       ('coinbase', 'strict $.event.id', 'strict $.event.type',
        'strict $.event',
        'Coinbase Commerce''s events, nested under "event" '
        '(docs/providers.md)');

ALTER TABLE mt5credit.provider_payload
    DROP CONSTRAINT provider_payload_payload_check,
    ADD CONSTRAINT provider_payload_payload_fkey
        FOREIGN KEY (payload) REFERENCES mt5credit.payload_format;

CREATE TABLE mt5credit.payload_rule (
    payload     text NOT NULL REFERENCES mt5credit.payload_format
                CHECK (payload <> 'stripe'),
    event_type  text NOT NULL CHECK (length(event_type) BETWEEN 1 AND 255),
    step        smallint NOT NULL CHECK (step BETWEEN 1 AND 9),
    -- a jsonpath predicate: the rule applies where it is true (NULL:
    -- always); the first rule of the type, by step, that applies decides
    only_if     jsonpath,
    action      text NOT NULL
                CHECK (action IN ('paid', 'pending', 'failed', 'expired',
                                  'refund', 'chargeback',
                                  'chargeback_reversal', 'payout_status',
                                  'review', 'ignore')),
    payment     jsonpath,               -- the payment (refund, dispute) id
    key_prefix  text NOT NULL DEFAULT '',   -- around it: the key stored
    key_suffix  text NOT NULL DEFAULT '',
    original    jsonpath,               -- the payment a reversal is of
    deposit     jsonpath,               -- our deposit reference
    amount      jsonpath,
    amount_form text CHECK (amount_form IN ('minor', 'decimal')),
    -- the sum of every value this yields, read as the amount is, must be
    -- the amount, or the fact is a review (what a crypto charge was
    -- paid against what it asked)
    received    jsonpath,
    currency    jsonpath,
    note        jsonpath,               -- a status's word, or ...
    note_text   text,                   -- ... this, when it yields none
    PRIMARY KEY (payload, event_type, step),
    CHECK ((amount IS NULL) = (amount_form IS NULL)),
    CHECK (received IS NULL OR amount IS NOT NULL),
    -- a paid fact names everything a credit needs; a reversal its payment
    CHECK (action <> 'paid' OR (payment IS NOT NULL AND deposit IS NOT NULL
                                AND amount IS NOT NULL
                                AND currency IS NOT NULL)),
    CHECK (action NOT IN ('refund', 'chargeback', 'chargeback_reversal')
           OR (payment IS NOT NULL AND original IS NOT NULL
               AND amount IS NOT NULL AND currency IS NOT NULL)),
    CHECK (action NOT IN ('review', 'ignore') OR note_text IS NOT NULL),
    -- every field path strict (a condition may be lax: it asks whether,
    -- not where)
    CHECK (coalesce(payment::text, 'strict ') LIKE 'strict %'
           AND coalesce(original::text, 'strict ') LIKE 'strict %'
           AND coalesce(deposit::text, 'strict ') LIKE 'strict %'
           AND coalesce(amount::text, 'strict ') LIKE 'strict %'
           AND coalesce(received::text, 'strict ') LIKE 'strict %'
           AND coalesce(currency::text, 'strict ') LIKE 'strict %'
           AND coalesce(note::text, 'strict ') LIKE 'strict %')
);

COMMENT ON TABLE mt5credit.payload_rule IS
    'What a format''s event type means (076): the first rule by step whose '
    'only_if holds decides; a type without a rule is no money';

-- a stored event is read again (a replay, a backfill) as it was read
-- first: a rule is added, never changed or taken away
CREATE FUNCTION mt5credit.payload_rule_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'payload rule %/% step %: rules are fixed once written; '
                    'a new reading needs a new format',
                    OLD.payload, OLD.event_type, OLD.step
        USING ERRCODE = 'MC013';
END
$$;

CREATE TRIGGER payload_rule_fixed
    BEFORE UPDATE OR DELETE ON mt5credit.payload_rule
    FOR EACH ROW EXECUTE FUNCTION mt5credit.payload_rule_guard();

CREATE FUNCTION mt5credit.payload_format_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'payload format %: fixed once written; a new reading '
                    'needs a new format', OLD.payload
        USING ERRCODE = 'MC013';
END
$$;

CREATE TRIGGER payload_format_fixed
    BEFORE UPDATE OR DELETE ON mt5credit.payload_format
    FOR EACH ROW EXECUTE FUNCTION mt5credit.payload_format_guard();


-- The generic payload (docs/providers.md "The generic payload"): what
-- standard_facts() and the generic part of status_facts() said.
INSERT INTO mt5credit.payload_rule (payload, event_type, step, action,
    payment, key_prefix, key_suffix, original, deposit, amount, amount_form,
    currency, note, note_text)
VALUES
    ('generic', 'payment.succeeded', 1, 'paid', 'strict $.data.payment_id', '',
     '', NULL, 'strict $.data.deposit_reference', 'strict $.data.amount_minor',
     'minor', 'strict $.data.currency', NULL, NULL),
    ('generic', 'payment.pending', 1, 'pending', 'strict $.data.payment_id',
     '', '', NULL, 'strict $.data.deposit_reference', NULL, NULL,
     'strict $.data.currency', NULL, NULL),
    ('generic', 'payment.failed', 1, 'failed', 'strict $.data.payment_id', '',
     '', NULL, 'strict $.data.deposit_reference', NULL, NULL,
     'strict $.data.currency', NULL, NULL),
    ('generic', 'payment.expired', 1, 'expired', 'strict $.data.payment_id',
     '', '', NULL, 'strict $.data.deposit_reference', NULL, NULL,
     'strict $.data.currency', NULL, NULL),
    ('generic', 'payment.refunded', 1, 'refund', 'strict $.data.refund_id',
     'refund:', '', 'strict $.data.payment_id', NULL,
     'strict $.data.amount_minor', 'minor', 'strict $.data.currency', NULL,
     NULL),
    ('generic', 'payment.chargeback', 1, 'chargeback',
     'strict $.data.chargeback_id', 'chargeback:', '',
     'strict $.data.payment_id', NULL, 'strict $.data.amount_minor', 'minor',
     'strict $.data.currency', NULL, NULL),
    ('generic', 'payment.chargeback_reversed', 1, 'chargeback_reversal',
     'strict $.data.chargeback_id', 'chargeback:', ':reversed',
     'strict $.data.payment_id', NULL, 'strict $.data.amount_minor', 'minor',
     'strict $.data.currency', NULL, NULL),
    -- a payout rail's statuses: wake-ups of the payout sender (019)
    ('generic', 'payout.processing', 1, 'payout_status',
     'strict $.data.payout_id', '', '', NULL, 'strict $.data.reference', NULL,
     NULL, NULL, 'strict $.data.status', 'processing'),
    ('generic', 'payout.paid', 1, 'payout_status', 'strict $.data.payout_id',
     '', '', NULL, 'strict $.data.reference', NULL, NULL, NULL,
     'strict $.data.status', 'paid'),
    ('generic', 'payout.failed', 1, 'payout_status', 'strict $.data.payout_id',
     '', '', NULL, 'strict $.data.reference', NULL, NULL, NULL,
     'strict $.data.status', 'failed'),
    ('generic', 'payout.returned', 1, 'payout_status',
     'strict $.data.payout_id', '', '', NULL, 'strict $.data.reference', NULL,
     NULL, NULL, 'strict $.data.status', 'returned');


-- Checkout.com (docs/providers.md "Checkout.com"): what 075's
-- checkout_facts() said.  Amounts in integer minor units; the deposit is
-- the payment's reference, which the portal sets to ours.
INSERT INTO mt5credit.payload_rule (payload, event_type, step, action,
    payment, key_prefix, key_suffix, original, deposit, amount, amount_form,
    currency)
VALUES
    ('checkout', 'payment_captured', 1, 'paid', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', 'strict $.data.amount', 'minor',
     'strict $.data.currency'),
    ('checkout', 'payment_approved', 1, 'pending', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_pending', 1, 'pending', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_declined', 1, 'failed', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_capture_declined', 1, 'failed', 'strict $.data.id',
     '', '', NULL, 'strict $.data.reference', NULL, NULL,
     'strict $.data.currency'),
    ('checkout', 'payment_expired', 1, 'expired', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_canceled', 1, 'expired', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_voided', 1, 'expired', 'strict $.data.id', '', '',
     NULL, 'strict $.data.reference', NULL, NULL, 'strict $.data.currency'),
    ('checkout', 'payment_refunded', 1, 'refund', 'strict $.data.action_id',
     'refund:', '', 'strict $.data.id', NULL, 'strict $.data.amount', 'minor',
     'strict $.data.currency'),
    -- one chargeback per dispute, however many of these come
    ('checkout', 'dispute_evidence_required', 1, 'chargeback',
     'strict $.data.id', 'chargeback:', '', 'strict $.data.payment_id', NULL,
     'strict $.data.amount', 'minor', 'strict $.data.currency'),
    ('checkout', 'dispute_accepted', 1, 'chargeback', 'strict $.data.id',
     'chargeback:', '', 'strict $.data.payment_id', NULL,
     'strict $.data.amount', 'minor', 'strict $.data.currency'),
    ('checkout', 'dispute_lost', 1, 'chargeback', 'strict $.data.id',
     'chargeback:', '', 'strict $.data.payment_id', NULL,
     'strict $.data.amount', 'minor', 'strict $.data.currency'),
    ('checkout', 'dispute_expired', 1, 'chargeback', 'strict $.data.id',
     'chargeback:', '', 'strict $.data.payment_id', NULL,
     'strict $.data.amount', 'minor', 'strict $.data.currency'),
    ('checkout', 'dispute_won', 1, 'chargeback_reversal', 'strict $.data.id',
     'chargeback:', ':reversed', 'strict $.data.payment_id', NULL,
     'strict $.data.amount', 'minor', 'strict $.data.currency'),
    ('checkout', 'dispute_canceled', 1, 'chargeback_reversal',
     'strict $.data.id', 'chargeback:', ':reversed',
     'strict $.data.payment_id', NULL, 'strict $.data.amount', 'minor',
     'strict $.data.currency');


-- Coinbase Commerce (docs/providers.md "Coinbase Commerce").  A charge's
-- id is its payment key; the portal puts our deposit reference in the
-- charge's metadata as deposit_reference; the amount is the charge's
-- local price, a decimal string.  Its timeline says UNRESOLVED (with
-- UNDERPAID, OVERPAID, DELAYED, MULTIPLE, MANUAL or OTHER) when it was
-- not paid once and in full and on time.
INSERT INTO mt5credit.payload_rule (payload, event_type, step, only_if,
    action, payment, deposit, amount, amount_form, received, currency,
    note_text)
VALUES
    ('coinbase', 'charge:confirmed', 1,
     'exists($.event.data.timeline[*] ? (@.status == "UNRESOLVED"))',
     'review', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'confirmed, but its timeline says unresolved (paid short, over, '
     'late or more than once)'),
    -- asked positively: a payment missing a field is not one that passes
    ('coinbase', 'charge:confirmed', 2,
     '$.event.data.payments.type() != "array" || '
     '$.event.data.payments.size() != 1',
     'review', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'confirmed, paid in other than one payment'),
    ('coinbase', 'charge:confirmed', 3,
     '!(exists($.event.data.payments[*] ? (@.status == "CONFIRMED" && '
     '@.value.local.currency == $.event.data.pricing.local.currency)))',
     'review', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'confirmed, its payment not confirmed or not in the price''s '
     'currency'),
    -- paid once, in full: the one payment's local value is the price
    ('coinbase', 'charge:confirmed', 4, NULL, 'paid', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal',
     'strict $.event.data.payments[*].value.local.amount',
     'strict $.event.data.pricing.local.currency', NULL),
    -- seen on the chain, not yet confirmed: never money
    ('coinbase', 'charge:pending', 1, NULL, 'pending',
     'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference', NULL, NULL, NULL,
     'strict $.event.data.pricing.local.currency', NULL),
    -- failed after something was paid (short, say): a person decides
    ('coinbase', 'charge:failed', 1, 'exists($.event.data.payments[*])',
     'review', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'failed with a payment received (paid short or late)'),
    ('coinbase', 'charge:failed', 2, NULL, 'failed', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference', NULL, NULL, NULL,
     'strict $.event.data.pricing.local.currency', NULL),
    ('coinbase', 'charge:delayed', 1, NULL, 'review', 'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'paid after the charge expired'),
    ('coinbase', 'charge:resolved', 1, NULL, 'review',
     'strict $.event.data.id',
     'strict $.event.data.metadata.deposit_reference',
     'strict $.event.data.pricing.local.amount', 'decimal', NULL,
     'strict $.event.data.pricing.local.currency',
     'resolved by hand in Coinbase Commerce: what it means here is a '
     'person''s decision'),
    ('coinbase', 'charge:created', 1, NULL, 'ignore', NULL, NULL, NULL, NULL,
     NULL, NULL, 'a charge opened: no payment yet');


-- --- reading a body by its format -------------------------------------------

-- the first value a path yields; errors (a string where a number was
-- meant, say) yield none
CREATE FUNCTION mt5credit.payload_value(p_body jsonb, p_path jsonpath)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_path IS NOT NULL
                THEN jsonb_path_query_first(p_body, p_path, '{}', true) END
$$;

-- a decimal amount ("100.00", or the number 100.00) in minor units of its
-- currency, exactly: NULL for an unknown currency or more places than it
-- has (never rounded, never through floating point)
CREATE FUNCTION mt5credit.json_decimal_minor(p jsonb, p_currency text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE WHEN scale(m) = 0 AND m < 1e18 THEN m::bigint END
    FROM (SELECT CASE WHEN jsonb_typeof(p) IN ('string', 'number')
                       AND (p #>> '{}') ~ '^[0-9]{1,15}(\.[0-9]{1,18})?$'
                      THEN major_to_minor((p #>> '{}')::numeric, p_currency)
                 END AS m) x
$$;

-- an amount as a rule writes it
CREATE FUNCTION mt5credit.payload_amount(p jsonb, p_form text,
                                         p_currency text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT CASE p_form WHEN 'minor' THEN json_minor(p)
                       WHEN 'decimal' THEN json_decimal_minor(p, p_currency)
           END
$$;

-- where a provider's events keep their id and type
CREATE FUNCTION mt5credit.payload_event(p_provider text, p_body jsonb,
                                        OUT event_id text,
                                        OUT event_type text,
                                        OUT event_part jsonpath)
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT json_text(payload_value(p_body, f.event_id)),
           json_text(payload_value(p_body, f.event_type)), f.event_part
    FROM payload_format f
    WHERE f.payload = coalesce((SELECT p.payload FROM provider_payload p
                                WHERE p.provider = p_provider), 'generic')
$$;

-- the fact an event is, by its format's rules
CREATE FUNCTION mt5credit.rule_facts(p_payload text, p_type text,
                                     p_body jsonb)
RETURNS SETOF mt5credit.payment_fact
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r       payload_rule;
    v_cur   text;
    v_amt   bigint;
    v_key   text;
    v_got   numeric;
    v_bad   boolean;
    v_note  text;
    x       jsonb;
BEGIN
    FOR r IN SELECT * FROM payload_rule
             WHERE payload = p_payload AND event_type = p_type
             ORDER BY step
    LOOP
        CONTINUE WHEN r.only_if IS NOT NULL
            AND jsonb_path_match(p_body, r.only_if, '{}', true)
                IS NOT TRUE;

        v_cur := upper(json_text(payload_value(p_body, r.currency)));
        v_amt := payload_amount(payload_value(p_body, r.amount),
                                r.amount_form, v_cur);
        v_key := r.key_prefix || json_text(payload_value(p_body, r.payment))
                 || r.key_suffix;
        v_note := coalesce(json_text(payload_value(p_body, r.note)),
                           r.note_text,
                           CASE WHEN r.action IN ('pending', 'failed',
                                                  'expired')
                                THEN p_type END);

        -- what was received, read as the amount is, summed exactly
        IF r.received IS NOT NULL AND v_amt IS NOT NULL THEN
            v_got := 0;
            v_bad := false;
            FOR x IN SELECT * FROM jsonb_path_query(p_body, r.received,
                                                    '{}', true)
            LOOP
                v_bad := v_bad OR payload_amount(x, r.amount_form, v_cur)
                                  IS NULL;
                v_got := v_got + coalesce(payload_amount(x, r.amount_form,
                                                         v_cur), 0);
            END LOOP;

            IF v_bad OR v_got <> v_amt THEN
                RETURN NEXT ('review', v_key, NULL,
                             json_text(payload_value(p_body, r.deposit)),
                             v_amt, v_cur,
                             p_type || ': received '
                             || CASE WHEN v_bad THEN 'an amount not in '
                                     || v_cur ELSE v_got || '' END
                             || ' minor units, asked ' || v_amt
                            )::payment_fact;
                RETURN;
            END IF;
        END IF;

        RETURN NEXT (r.action, v_key,
                     json_text(payload_value(p_body, r.original)),
                     json_text(payload_value(p_body, r.deposit)),
                     v_amt, v_cur, v_note)::payment_fact;
        RETURN;
    END LOOP;

    RETURN NEXT ('ignore', NULL, NULL, NULL, NULL, NULL,
                 'event type not mapped')::payment_fact;
END
$$;

-- 075's, the one place a body's format is chosen: Stripe's code, or the
-- format's rules
CREATE OR REPLACE FUNCTION mt5credit.payload_facts(p_provider text,
                                                   p_type text,
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

    IF v_payload = 'stripe' THEN
        RETURN QUERY SELECT * FROM stripe_facts(p_type, p_body);
        RETURN QUERY SELECT * FROM status_facts(p_provider, p_type, p_body);
    ELSE
        RETURN QUERY SELECT * FROM rule_facts(coalesce(v_payload, 'generic'),
                                              p_type, p_body);
    END IF;
END
$$;

DROP FUNCTION mt5credit.checkout_facts(text, jsonb);
DROP FUNCTION mt5credit.standard_facts(text, jsonb);


-- a review fact: money a person must decide on, never a credit
CREATE FUNCTION mt5credit.ingest_review(p_provider text,
                                        f mt5credit.payment_fact,
                                        p_event bigint)
RETURNS mt5credit.ingest_step
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_dep   deposit;
    v_case  bigint;
BEGIN
    SELECT * INTO v_dep FROM deposit
    WHERE reference = f.deposit_ref AND provider = p_provider;

    v_case := open_case('provider_payment_review', 'high',
                        'provider_payment_review:' || p_provider || ':'
                            || coalesce(f.payment_key, 'event ' || p_event)
                            || ':' || f.note,
                        jsonb_build_object('facts', to_jsonb(f)),
                        NULL, v_dep.id, p_event,
                        CASE WHEN f.currency IS NOT NULL
                             THEN f.amount_minor END,
                        f.currency);

    RETURN ('case_opened', NULL, f.note || ': case ' || v_case)::ingest_step;
END
$$;

-- 075's, with the review fact
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



-- 060's, the event's id and type where its format keeps them
CREATE OR REPLACE FUNCTION mt5credit.ingest(p_provider text, p_event_id text, p_raw_body bytea, p_scheme text, p_signed_at bigint, p_request_id text) RETURNS TABLE(outcome text, credit_id bigint, event_row_id bigint, detail text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    v_body      jsonb;
    v_type      text;
    v_id        text;
    v_part      jsonpath;
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

    -- where the provider's format keeps them (076)
    SELECT coalesce(p_event_id, e.event_id), e.event_type, e.event_part
    INTO v_id, v_type, v_part
    FROM payload_event(p_provider, v_body) e;

    IF v_id IS NULL THEN
        RETURN QUERY SELECT * FROM ingest_malformed(p_provider, p_raw_body,
            v_sha, p_scheme, p_signed_at, v_rid,
            'no event id (a string of 1..255 bytes where the provider''s '
            'format keeps it)');
        RETURN;
    END IF;

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

        -- the same bytes, or (076) the same event in another delivery's
        -- envelope (a body redacted by retention cannot say: a person's)
        IF v_old.body_sha256 = v_sha
           OR (v_part IS NOT NULL AND v_old.body_redacted_at IS NULL
               AND payload_value(v_body, v_part) IS NOT NULL
               AND payload_value(v_body, v_part)
                   = payload_value(convert_from(v_old.raw_body,
                                                'UTF8')::jsonb, v_part))
        THEN
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
$_$;


-- 075's, the event's id and type where its format keeps them
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

-- 064's, reading an answer as ingest() will
CREATE OR REPLACE FUNCTION mt5credit.program_answer_unvouched(p_provider text, p_type text, p_body jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_facts   payment_fact[];
    f         payment_fact;
    d         deposit;
    v_found   boolean;
    v_object  text := p_body #>> '{data,object,id}';
BEGIN
    -- read as ingest() will read it
    v_facts := ARRAY(SELECT x FROM payload_facts(p_provider, p_type,
                                                 p_body) x);

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


REVOKE ALL ON FUNCTION mt5credit.payload_format_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.payload_rule_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.payload_value(jsonb, jsonpath) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.json_decimal_minor(jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.payload_amount(jsonb, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.payload_event(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.rule_facts(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.ingest_review(text, mt5credit.payment_fact,
                                               bigint) FROM PUBLIC;
