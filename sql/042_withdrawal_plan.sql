--
-- 042: the plan of a withdrawal: back the way the money came.
--
-- Brokers pay a withdrawal back to the source first: a card deposit is
-- refunded, up to what is left refundable on it (anti-money-laundering
-- practice, and the card schemes' rule); only the rest (profits, or
-- deposits past their refund window) is paid out to the client's bank.
-- At preparation the server splits the amount, newest deposit first:
--
--   refund legs   one per refundable deposit of this client on this
--                 login, each at most what is left refundable on that
--                 payment: paid, minus its refunds and chargebacks (not
--                 failed), plus reinstatements, minus earlier approved
--                 withdrawals' legs on it; in the payment's currency, an
--                 FX deposit's at its own stored rate, never a new one;
--   a payout leg  for the rest, in the withdrawal's currency.
--
-- The plan is stored (append-only, one plan per preparation) and signed:
-- the prepared digest covers the request and the plan, and approval
-- names that digest.  Approval computes the plan again and refuses when
-- it changed (a refund or another withdrawal came in since): what is
-- approved is what was shown, and a plan never changes after approval.
-- The legs' shares of the MT5 debit add up to the withdrawal's amount,
-- which is the debit (017).
--
-- Refund windows per provider are the schema owner's configuration
-- (refund_window): a deposit older than its provider's window, or of a
-- provider without one, takes no leg.
--
-- Sending the legs is not here: until the refund sender and a payout
-- provider that can pay a third party exist, the payout of 018 still
-- pays the whole amount (docs/providers.md).
--
-- withdrawal_prepare() and withdrawal_approve() are re-declared here:
-- this file holds their current definitions.
--

CREATE TABLE mt5credit.refund_window (
    provider  text     PRIMARY KEY
              CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    days      integer  NOT NULL CHECK (days BETWEEN 1 AND 3650)
);

COMMENT ON TABLE mt5credit.refund_window IS
    'How long after a payment each provider can still refund it; a '
    'provider absent here refunds nothing (configuration: the schema '
    'owner edits it).';

-- Stripe refunds a card payment for about 180 days (the card networks')
INSERT INTO mt5credit.refund_window VALUES ('stripe', 180);


ALTER TABLE mt5credit.withdrawal
    ADD COLUMN plan_no      integer CHECK (plan_no > 0),
    ADD COLUMN plan_digest  text    CHECK (plan_digest ~ '^[0-9a-f]{32}$'),
    ADD CONSTRAINT withdrawal_plan_prepared
        CHECK ((plan_digest IS NULL) = (plan_no IS NULL)
               AND (plan_digest IS NULL OR prepared_digest IS NOT NULL)),
    -- the approved digest is of the request and its plan (before 042: of
    -- the request alone)
    DROP CONSTRAINT withdrawal_approved_as_asked,
    ADD CONSTRAINT withdrawal_approved_as_asked
        CHECK (approved_digest IS NULL
               OR (approved_digest = prepared_digest
                   AND approved_digest
                       = CASE WHEN plan_digest IS NULL THEN request_digest
                              ELSE md5(request_digest || '|' || plan_digest)
                         END));


CREATE TABLE mt5credit.withdrawal_leg (
    withdrawal_id         bigint   NOT NULL
                          REFERENCES mt5credit.withdrawal (id),
    plan_no               integer  NOT NULL CHECK (plan_no > 0),
    leg                   integer  NOT NULL CHECK (leg > 0),
    kind                  text     NOT NULL
                          CHECK (kind IN ('refund', 'payout')),
    provider              text     NOT NULL,
    -- a refund leg: the deposit's credit and the provider's payment
    credit_id             bigint   REFERENCES mt5credit.mt5_credit (id),
    payment_key           text,
    -- what the leg moves, in its own currency (a refund: the payment's)
    amount_minor          bigint   NOT NULL CHECK (amount_minor > 0),
    currency              text     NOT NULL
                          REFERENCES mt5credit.currency (code),
    -- its share of the MT5 debit, in the withdrawal's currency
    account_amount_minor  bigint   NOT NULL CHECK (account_amount_minor > 0),
    -- an FX deposit's own stored rate (payment -> account), never a new one
    fx_rate               numeric  CHECK (fx_rate > 0),
    PRIMARY KEY (withdrawal_id, plan_no, leg),
    CHECK ((kind = 'refund')
           = (credit_id IS NOT NULL AND payment_key IS NOT NULL)),
    CHECK (kind = 'refund' OR fx_rate IS NULL)
);

COMMENT ON TABLE mt5credit.withdrawal_leg IS
    'The plan of a withdrawal, one per preparation: refunds to the '
    'deposits it came from, newest first, and a payout for the rest; '
    'append-only.';

CREATE INDEX withdrawal_leg_credit_idx
    ON mt5credit.withdrawal_leg (credit_id) WHERE credit_id IS NOT NULL;

CREATE TRIGGER withdrawal_leg_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON mt5credit.withdrawal_leg
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();


-- an amended request's preparation is void (016's guard): so is its
-- plan; a decided request's plan never changes, the owner's writes too
CREATE FUNCTION mt5credit.withdrawal_plan_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF OLD.status NOT IN ('requested', 'prepared')
       AND (NEW.plan_no, NEW.plan_digest)
           IS DISTINCT FROM (OLD.plan_no, OLD.plan_digest)
    THEN
        RAISE EXCEPTION 'withdrawal % is %: its plan cannot change',
                        OLD.reference, OLD.status
            USING ERRCODE = 'MC070';
    END IF;

    IF NEW.prepared_digest IS NULL THEN
        NEW.plan_no := NULL;
        NEW.plan_digest := NULL;
    END IF;
    RETURN NEW;
END
$$;

-- (BEFORE triggers fire in name order: after withdrawal_guard)
CREATE TRIGGER withdrawal_plan_guard
    BEFORE UPDATE ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_plan_guard();


--
-- withdrawal_plan(): the legs a withdrawal would take now, in order.
-- Deterministic: newest deposit first (by credit, then id), each leg at
-- most what is left refundable on its payment, the last leg a payout of
-- the rest.  An FX leg's amount is in the payment's currency, and its
-- share of the debit is that amount at the deposit's stored rate (so the
-- share is exact: what the refund is worth as the deposit was credited).
--
CREATE FUNCTION mt5credit.withdrawal_plan(p_withdrawal bigint)
RETURNS TABLE (leg integer, kind text, provider text, credit_id bigint,
               payment_key text, amount_minor bigint, currency text,
               account_amount_minor bigint, fx_rate numeric)
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    d       record;
    v_left  bigint;
    v_n     integer := 0;
    v_paid  bigint;
    v_acc   bigint;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal WHERE id = p_withdrawal;
    v_left := w.amount_minor;

    FOR d IN
        SELECT c.id, c.provider, c.provider_payment_id, c.paid_currency,
               c.amount_minor AS credited, c.fx_rate,
               c.paid_amount_minor
               - coalesce((SELECT sum(CASE r.direction
                                      WHEN 'debit' THEN r.paid_amount_minor
                                      ELSE -r.paid_amount_minor END)
                           FROM mt5_credit r
                           WHERE r.original_credit_id = c.id
                             AND r.kind IN ('refund', 'chargeback')
                             AND r.status <> 'failed'), 0)
               - coalesce((SELECT sum(l.amount_minor)
                           FROM withdrawal_leg l
                           JOIN withdrawal o ON o.id = l.withdrawal_id
                                            AND o.plan_no = l.plan_no
                           WHERE l.credit_id = c.id
                             AND o.status = 'approved'
                             AND o.id <> w.id), 0) AS refundable
        FROM mt5_credit c
        JOIN deposit dep ON dep.id = c.deposit_id
        JOIN refund_window rw ON rw.provider = c.provider
        WHERE c.kind = 'deposit' AND c.status = 'done'
          AND dep.client_id = w.client_id
          AND c.mt5_server = w.mt5_server AND c.mt5_login = w.mt5_login
          AND c.currency = w.currency
          AND c.created_at >= now() - make_interval(days => rw.days)
        ORDER BY c.created_at DESC, c.id DESC
    LOOP
        EXIT WHEN v_left = 0;
        CONTINUE WHEN d.refundable <= 0;

        IF d.fx_rate IS NULL THEN
            v_paid := least(d.refundable, v_left);
            v_acc := v_paid;
        ELSE
            -- the largest payment amount whose worth at the stored rate
            -- fits in what is left
            v_paid := least(d.refundable,
                            floor(v_left / (d.fx_rate
                                  * power(10::numeric,
                                          (SELECT t.minor_digits
                                                  - f.minor_digits
                                           FROM currency f, currency t
                                           WHERE f.code = d.paid_currency
                                             AND t.code = w.currency))))
                            ::bigint + 1);
            WHILE v_paid > 0
                  AND convert_minor(v_paid, d.paid_currency, w.currency,
                                    d.fx_rate) > v_left
            LOOP
                v_paid := v_paid - 1;
            END LOOP;
            CONTINUE WHEN v_paid <= 0;
            v_acc := convert_minor(v_paid, d.paid_currency, w.currency,
                                   d.fx_rate);
            CONTINUE WHEN v_acc <= 0;
        END IF;

        v_n := v_n + 1;
        v_left := v_left - v_acc;
        leg := v_n; kind := 'refund'; provider := d.provider;
        credit_id := d.id; payment_key := d.provider_payment_id;
        amount_minor := v_paid; currency := d.paid_currency;
        account_amount_minor := v_acc; fx_rate := d.fx_rate;
        RETURN NEXT;
    END LOOP;

    IF v_left > 0 THEN
        leg := v_n + 1; kind := 'payout'; provider := w.provider;
        credit_id := NULL; payment_key := NULL;
        amount_minor := v_left; currency := w.currency;
        account_amount_minor := v_left; fx_rate := NULL;
        RETURN NEXT;
    END IF;
END
$$;


-- the digest of the plan a withdrawal would take now: every leg, in order
CREATE FUNCTION mt5credit.withdrawal_plan_digest(p_withdrawal bigint)
RETURNS text
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT md5(string_agg(concat_ws(':', p.leg, p.kind, p.provider,
                                    p.credit_id, p.payment_key,
                                    p.amount_minor, p.currency,
                                    p.account_amount_minor, p.fx_rate),
                          '|' ORDER BY p.leg))
    FROM withdrawal_plan(p_withdrawal) p
$$;


--
-- The maker (016's, with the plan): the request is prepared with its
-- plan, stored as the next plan of this withdrawal; the digest returned
-- is of both, and is what the checker must name.
--
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_prepare(p_reference text,
    p_note text)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    v_plan  integer;
    v_pd    text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    -- (one prepared before plans existed is prepared again, with its plan)
    IF NOT FOUND OR NOT (w.status = 'requested'
                         OR (w.status = 'prepared' AND w.plan_no IS NULL))
    THEN
        RAISE EXCEPTION 'withdrawal % is not waiting to be prepared',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    -- one plan at a time per account: two withdrawals of one login are
    -- planned (and approved) one after the other
    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    SELECT coalesce(max(plan_no), 0) + 1 INTO v_plan
    FROM withdrawal_leg WHERE withdrawal_id = w.id;

    INSERT INTO withdrawal_leg (withdrawal_id, plan_no, leg, kind, provider,
                                credit_id, payment_key, amount_minor,
                                currency, account_amount_minor, fx_rate)
    SELECT w.id, v_plan, p.leg, p.kind, p.provider, p.credit_id,
           p.payment_key, p.amount_minor, p.currency,
           p.account_amount_minor, p.fx_rate
    FROM withdrawal_plan(w.id) p;

    -- the same plan as the legs just stored: one transaction, one now()
    v_pd := withdrawal_plan_digest(w.id);

    UPDATE withdrawal
    SET status = 'prepared', prepared_by = session_user,
        prepared_at = clock_timestamp(),
        prepared_digest = md5(request_digest || '|' || v_pd),
        plan_no = v_plan, plan_digest = v_pd,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = w.status
    RETURNING * INTO w;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'withdrawal % changed under the preparation',
                        p_reference USING ERRCODE = 'MC073';
    END IF;

    RETURN w.prepared_digest;
END
$$;


--
-- The checker (016's, with the plan): approves the request and plan
-- whose digest they saw.  Refused to the maker; refused when the request
-- is not what was prepared, or when its plan would now be another (a
-- refund, a chargeback or another withdrawal came in since): prepare it
-- again, and the checker sees the new plan.
--
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_approve(p_reference text,
    p_digest text, p_note text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w       withdrawal;
    v_rows  integer;
    v_now   text;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE reference = p_reference
    FOR UPDATE;
    IF NOT FOUND OR w.status <> 'prepared' THEN
        RAISE EXCEPTION 'withdrawal % is not prepared for approval',
                        p_reference USING ERRCODE = 'MC073';
    END IF;
    IF w.prepared_by = session_user THEN
        RAISE EXCEPTION 'maker-checker: % prepared withdrawal % and cannot '
                        'approve it; another person must', session_user,
                        p_reference USING ERRCODE = 'MC074';
    END IF;
    IF w.plan_digest IS NULL THEN
        RAISE EXCEPTION 'withdrawal % was prepared before withdrawals had '
                        'a plan: prepare it again, then approve',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
    IF p_digest IS DISTINCT FROM w.prepared_digest
       OR w.prepared_digest IS DISTINCT FROM
          md5(w.request_digest || '|' || w.plan_digest)
    THEN
        RAISE EXCEPTION 'withdrawal % is not the request that was '
                        'prepared and shown: nothing approved', p_reference
            USING ERRCODE = 'MC075';
    END IF;

    PERFORM 1 FROM client_account
    WHERE mt5_server = w.mt5_server AND mt5_login = w.mt5_login
    FOR UPDATE;

    v_now := withdrawal_plan_digest(w.id);

    IF v_now IS DISTINCT FROM w.plan_digest THEN
        RAISE EXCEPTION 'withdrawal %: its plan changed since it was '
                        'prepared (a refund, a chargeback or another '
                        'withdrawal came in): nothing approved; prepare it '
                        'again', p_reference
            USING ERRCODE = 'MC076';
    END IF;

    UPDATE withdrawal
    SET status = 'approved', approved_by = session_user,
        approved_at = clock_timestamp(), approved_digest = p_digest,
        note = coalesce(p_note, note)
    WHERE id = w.id AND status = 'prepared'
      AND prepared_digest = p_digest;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'withdrawal % changed under the approval',
                        p_reference USING ERRCODE = 'MC075';
    END IF;
END
$$;


-- what the maker and the checker see: the request's plan, leg by leg
CREATE FUNCTION mt5credit.withdrawal_plan_show(p_reference text)
RETURNS TABLE (leg integer, kind text, provider text, payment_key text,
               amount_minor bigint, currency text,
               account_amount_minor bigint, fx_rate numeric,
               plan_no integer, prepared_digest text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT l.leg, l.kind, l.provider, l.payment_key, l.amount_minor,
           l.currency, l.account_amount_minor, l.fx_rate, l.plan_no,
           w.prepared_digest
    FROM withdrawal w
    JOIN withdrawal_leg l ON l.withdrawal_id = w.id
                         AND l.plan_no = w.plan_no
    WHERE w.reference = p_reference
    ORDER BY l.leg
$$;


-- the desk's queue: what waits for a maker or a checker, oldest first
CREATE FUNCTION mt5credit.withdrawal_queue(p_status text, p_limit integer)
RETURNS TABLE (reference text, status text, client_id text,
               mt5_server text, mt5_login bigint, amount_minor bigint,
               currency text, legs bigint, refunds_minor bigint,
               prepared_by text, created_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT w.reference, w.status, w.client_id, w.mt5_server, w.mt5_login,
           w.amount_minor, w.currency,
           (SELECT count(*) FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no),
           (SELECT coalesce(sum(l.account_amount_minor), 0)
            FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no
              AND l.kind = 'refund'),
           w.prepared_by, w.created_at
    FROM withdrawal w
    WHERE (p_status IS NULL AND w.status IN ('requested', 'prepared'))
       OR w.status = p_status
    ORDER BY w.created_at, w.id
    LIMIT least(greatest(coalesce(p_limit, 100), 1), 10000)
$$;


-- everything the checker signs: the request, its plan, the digest
CREATE FUNCTION mt5credit.withdrawal_show(p_reference text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT jsonb_build_object(
        'reference', w.reference, 'status', w.status,
        'client_id', w.client_id, 'provider', w.provider,
        'mt5_server', w.mt5_server, 'mt5_login', w.mt5_login,
        'amount_minor', w.amount_minor, 'currency', w.currency,
        'destination', w.destination, 'created_at', w.created_at,
        'prepared_by', w.prepared_by, 'prepared_at', w.prepared_at,
        'prepared_digest', w.prepared_digest,
        'approved_by', w.approved_by, 'approved_at', w.approved_at,
        'note', w.note, 'plan_no', w.plan_no,
        'plan', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'leg', l.leg, 'kind', l.kind, 'provider', l.provider,
                'payment', l.payment_key, 'amount_minor', l.amount_minor,
                'currency', l.currency,
                'account_amount_minor', l.account_amount_minor,
                'fx_rate', l.fx_rate) ORDER BY l.leg)
            FROM withdrawal_leg l
            WHERE l.withdrawal_id = w.id AND l.plan_no = w.plan_no), '[]'),
        'debit', (SELECT jsonb_build_object('reference', c.reference,
                                            'status', c.status,
                                            'deal', c.mt5_deal_ticket)
                  FROM mt5_credit c
                  WHERE c.withdrawal_id = w.id AND c.kind = 'withdrawal'))
    FROM withdrawal w
    WHERE w.reference = p_reference
$$;


REVOKE ALL ON FUNCTION
    mt5credit.withdrawal_queue(text, integer),
    mt5credit.withdrawal_show(text),
    mt5credit.withdrawal_plan(bigint),
    mt5credit.withdrawal_plan_digest(bigint),
    mt5credit.withdrawal_plan_show(text)
    FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    mt5credit.withdrawal_plan_show(text),
    mt5credit.withdrawal_queue(text, integer),
    mt5credit.withdrawal_show(text)
    TO mt5credit_operator, mt5credit_reader;
