--
-- 079: risk holds.  Rules, kept as data and changed only by two people,
-- hold a deposit's credit for a person before MT5 is ever called
-- (docs/risk.md).
--
-- A deposit's credit is judged as it is born, whichever path makes it
-- (ingest(), ingest_batch(), a replay, the backfill): a BEFORE INSERT
-- trigger reads the rules that apply to its currency and provider, and
-- writes what tripped, with the figures, into held_for.  An AFTER INSERT
-- trigger then moves it pending -> held in the same transaction, so no
-- worker can ever see it pending, and opens a risk_hold case.
--
-- A held credit is claimed by nobody (claim_credit() takes pending ones),
-- looked up by nobody, and moved by nobody but two people: one proposes
-- release_hold or return_hold on the case, another approves it
-- (money_proposal's four eyes, as every money decision).  Released, it
-- is queued; within a week of a rewind it is looked up first, as any new
-- credit then is (payment_credit_after_rewind(), 069).  Returned, it is
-- failed: never credited; the money goes back through the provider.
--
-- The judging is ordered per client: an advisory lock on the client is
-- taken before counting, so two of a client's deposits judged at once
-- cannot each miss the other.  A trigger BEFORE INSERT sees the rows an
-- ingest_batch() statement inserted before this one and none after, so a
-- batch judges as the same events ingested one by one would.
--
-- The rules (risk_rule) are changed only by an approved risk_rule_change,
-- proposed by one person and decided by another; every change, approved
-- or not, is kept, with the rule as it was before.
--
-- Re-declared, this file holds their current definitions:
--   case_propose()  (065's; its amount now through exact_minor())
--   case_decide()   (065's; who may decide through decision_allowed())
--   work_status()   (050's)
--

-- 1. the held state ------------------------------------------------------

ALTER TABLE mt5credit.mt5_credit
    ADD COLUMN held_for jsonb;

COMMENT ON COLUMN mt5credit.mt5_credit.held_for IS
    'The risk rules a deposit''s credit tripped as it was born, each with '
    'the figures that tripped it (079); NULL: none.  Never changes.';

ALTER TABLE mt5credit.mt5_credit
    DROP CONSTRAINT mt5_credit_status_check,
    ADD CONSTRAINT mt5_credit_status_check
        CHECK (status IN ('pending', 'claimed', 'unknown', 'done', 'failed',
                          'held')),
    -- held, it was never attempted; returned from a hold, it never will
    -- be; released, it goes on from there
    DROP CONSTRAINT mt5_credit_check9,
    ADD CONSTRAINT mt5_credit_check9
        CHECK (status IN ('pending', 'held') OR attempts > 0
               OR (status = 'failed' AND held_for IS NOT NULL)),
    ADD CONSTRAINT mt5_credit_held_for_shape
        CHECK (held_for IS NULL
               OR (kind = 'deposit'
                   AND jsonb_typeof(held_for) = 'array'
                   AND jsonb_array_length(held_for) > 0)),
    ADD CONSTRAINT mt5_credit_held_has_reason
        CHECK (status <> 'held' OR held_for IS NOT NULL);

INSERT INTO mt5credit.credit_transition VALUES
    ('pending', 'held',    'a risk rule held it as it was born (079)'),
    ('held',    'pending', 'two people released it (079)'),
    ('held',    'unknown', 'two people released it within a week of a '
                           'rewind: looked up first (079)'),
    ('held',    'failed',  'two people returned it to its source (079)');

ALTER TABLE mt5credit.money_proposal
    DROP CONSTRAINT money_proposal_action_check,
    ADD CONSTRAINT money_proposal_action_check
        CHECK (action IN ('requeue_credit', 'correcting_credit',
                          'correcting_debit', 'settle_failed',
                          'settle_done', 'release_hold', 'return_hold'));

-- what tripped is evidence; it is written once, as the credit is born
CREATE FUNCTION mt5credit.credit_held_for_fixed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'credit %: why it was held never changes', OLD.id
        USING ERRCODE = 'MC011';
END
$$;

CREATE TRIGGER mt5_credit_held_for_fixed
    BEFORE UPDATE OF held_for ON mt5credit.mt5_credit
    FOR EACH ROW WHEN (OLD.held_for IS DISTINCT FROM NEW.held_for)
    EXECUTE FUNCTION mt5credit.credit_held_for_fixed();

-- 2. what every two-person decision shares ---------------------------------

-- an amount a person typed, in major units, as whole minor units of the
-- currency, exactly: 12.345 USD is refused, not rounded (023's rule, one
-- place for a case's corrections and a rule's limit)
CREATE FUNCTION mt5credit.exact_minor(p_amount text, p_currency text,
    p_what text, p_example text)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $_$
DECLARE
    v_num  numeric;
BEGIN
    IF p_amount IS NULL OR p_amount !~ '^[0-9]{1,15}(\.[0-9]{1,8})?$' THEN
        RAISE EXCEPTION '% needs an amount like %, not "%"', p_what,
                        p_example, coalesce(p_amount, '')
            USING ERRCODE = 'MC048';
    END IF;
    v_num := major_to_minor(p_amount::numeric, p_currency);
    IF v_num IS NULL THEN
        RAISE EXCEPTION '% needs a known currency, not "%"', p_what,
                        coalesce(p_currency, '')
            USING ERRCODE = 'MC048';
    END IF;
    IF v_num <> trunc(v_num) OR v_num <= 0 THEN
        RAISE EXCEPTION '% is not a positive amount in whole minor units '
                        'of %', p_amount, p_currency
            USING ERRCODE = 'MC048';
    END IF;
    RETURN v_num::bigint;
END
$_$;

-- may this person decide this, this way?  Another person approves or
-- rejects; only the proposer withdraws; a decision is made once (010's
-- rules, one place for a case's proposals and a rule's changes)
CREATE FUNCTION mt5credit.decision_allowed(p_what text, p_status text,
    p_proposed_by text, p_decision text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF p_status <> 'proposed' THEN
        RAISE EXCEPTION '% was already %', p_what, p_status
            USING ERRCODE = 'MC041';
    END IF;
    IF p_decision IS NULL OR p_decision NOT IN ('approve', 'reject',
                                                'withdraw')
    THEN
        RAISE EXCEPTION 'decide how? "%"', p_decision USING ERRCODE = 'MC047';
    END IF;
    IF p_decision = 'withdraw' AND p_proposed_by <> mt5credit.person() THEN
        RAISE EXCEPTION 'only % may withdraw %', p_proposed_by, p_what
            USING ERRCODE = 'MC049';
    END IF;
    IF p_decision <> 'withdraw' AND p_proposed_by = mt5credit.person() THEN
        RAISE EXCEPTION 'two-person rule: % proposed this and cannot % it; '
                        'another person must decide', mt5credit.person(),
                        p_decision
            USING ERRCODE = 'MC049';
    END IF;
END
$$;

-- 3. the rules ------------------------------------------------------------

CREATE TABLE mt5credit.risk_rule_change (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule            text NOT NULL,
    currency        text REFERENCES mt5credit.currency (code),
    provider        text CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    limit_minor     bigint CHECK (limit_minor > 0),
    limit_count     integer CHECK (limit_count > 0),
    remove          boolean NOT NULL DEFAULT false,
    note            text NOT NULL CHECK (length(note) BETWEEN 1 AND 4000),
    proposed_by     text NOT NULL,
    proposed_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    status          text NOT NULL DEFAULT 'proposed'
                    CHECK (status IN ('proposed', 'approved', 'rejected',
                                      'withdrawn')),
    decided_by      text,
    decided_at      timestamptz,
    decision_note   text,
    -- the rule as it was when this change was approved; NULL: there was
    -- none (or the change was not approved)
    rule_before     jsonb,

    CHECK (rule IN ('credit_amount', 'login_count_24h', 'login_sum_24h',
                    'client_count_24h', 'client_sum_24h', 'first_deposit',
                    'first_provider')),
    -- a limit where the rule has one, of its kind; none to remove a rule
    CHECK (remove OR (limit_minor IS NOT NULL)
                     = (rule IN ('credit_amount', 'login_sum_24h',
                                 'client_sum_24h'))),
    CHECK (remove OR (limit_count IS NOT NULL)
                     = (rule IN ('login_count_24h', 'client_count_24h'))),
    CHECK (NOT remove OR (limit_minor IS NULL AND limit_count IS NULL)),
    -- an amount is in a currency
    CHECK (rule NOT IN ('credit_amount', 'login_sum_24h', 'client_sum_24h')
           OR currency IS NOT NULL),
    CHECK ((status = 'proposed') = (decided_by IS NULL AND decided_at IS NULL)),
    CHECK (status <> 'withdrawn' OR decided_by = proposed_by),
    -- four eyes: who proposed a change never approves or rejects it
    CONSTRAINT risk_rule_change_four_eyes
        CHECK (status IN ('proposed', 'withdrawn')
               OR decided_by <> proposed_by)
);

COMMENT ON TABLE mt5credit.risk_rule_change IS
    'Every change to a risk rule, proposed by one person and approved or '
    'rejected by another (079); the history of the rules.';

-- the rules in force: written only by risk_rule_decide()
CREATE TABLE mt5credit.risk_rule (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule            text NOT NULL,
    currency        text REFERENCES mt5credit.currency (code),
    provider        text,
    limit_minor     bigint CHECK (limit_minor > 0),
    limit_count     integer CHECK (limit_count > 0),
    change_id       bigint NOT NULL
                    REFERENCES mt5credit.risk_rule_change (id),
    UNIQUE NULLS NOT DISTINCT (rule, currency, provider),
    CHECK ((limit_minor IS NOT NULL)
           = (rule IN ('credit_amount', 'login_sum_24h', 'client_sum_24h'))),
    CHECK ((limit_count IS NOT NULL)
           = (rule IN ('login_count_24h', 'client_count_24h'))),
    CHECK (rule NOT IN ('credit_amount', 'login_sum_24h', 'client_sum_24h')
           OR currency IS NOT NULL)
);

COMMENT ON TABLE mt5credit.risk_rule IS
    'The risk rules in force (079): each applies to deposits credited in '
    'its currency and through its provider, NULL meaning any.  A rule''s '
    'limit is the most that passes.';

CREATE FUNCTION mt5credit.risk_rule_change_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF (NEW.rule, NEW.currency, NEW.provider, NEW.limit_minor,
        NEW.limit_count, NEW.remove, NEW.note, NEW.proposed_by,
        NEW.proposed_at)
       IS DISTINCT FROM
       (OLD.rule, OLD.currency, OLD.provider, OLD.limit_minor,
        OLD.limit_count, OLD.remove, OLD.note, OLD.proposed_by,
        OLD.proposed_at)
    THEN
        RAISE EXCEPTION 'rule change % cannot change after it was made: '
                        'withdraw it and propose again', OLD.id
            USING ERRCODE = 'MC040';
    END IF;
    IF OLD.status <> 'proposed' THEN
        RAISE EXCEPTION 'rule change % was already %', OLD.id, OLD.status
            USING ERRCODE = 'MC041';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER risk_rule_change_guard
    BEFORE UPDATE ON mt5credit.risk_rule_change
    FOR EACH ROW EXECUTE FUNCTION mt5credit.risk_rule_change_guard();
CREATE TRIGGER risk_rule_change_no_delete
    BEFORE DELETE ON mt5credit.risk_rule_change
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();
CREATE TRIGGER risk_rule_change_no_truncate
    BEFORE TRUNCATE ON mt5credit.risk_rule_change
    FOR EACH STATEMENT EXECUTE FUNCTION mt5credit.refuse_change();

-- one person proposes; p_limit is text so that an amount is exact: major
-- units ('5000.00'), or a count ('3'); NULL for the first_* rules
CREATE FUNCTION mt5credit.risk_rule_propose(p_rule text, p_currency text,
    p_provider text, p_limit text, p_remove boolean, p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $_$
DECLARE
    v_minor  bigint;
    v_count  integer;
    v_id     bigint;
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
    ELSIF p_rule IN ('credit_amount', 'login_sum_24h', 'client_sum_24h') THEN
        v_minor := exact_minor(p_limit, p_currency, 'rule ' || p_rule,
                               '5000.00');
    ELSIF p_rule IN ('login_count_24h', 'client_count_24h') THEN
        IF p_limit IS NULL OR p_limit !~ '^[1-9][0-9]{0,5}$' THEN
            RAISE EXCEPTION 'rule % needs a count like 3, not "%"',
                            p_rule, coalesce(p_limit, '')
                USING ERRCODE = 'MC048';
        END IF;
        v_count := p_limit::integer;
    ELSIF p_rule IN ('first_deposit', 'first_provider') THEN
        IF p_limit IS NOT NULL THEN
            RAISE EXCEPTION 'rule % takes no limit', p_rule
                USING ERRCODE = 'MC048';
        END IF;
    ELSE
        RAISE EXCEPTION 'no risk rule "%"', coalesce(p_rule, '')
            USING ERRCODE = 'MC048';
    END IF;

    INSERT INTO risk_rule_change (rule, currency, provider, limit_minor,
                                  limit_count, remove, note, proposed_by)
    VALUES (p_rule, p_currency, p_provider, v_minor, v_count,
            coalesce(p_remove, false), p_note, mt5credit.person())
    RETURNING id INTO v_id;
    RETURN v_id;
END
$_$;

-- another person decides; approved, the change is in force at once for
-- every credit born after this transaction commits
CREATE FUNCTION mt5credit.risk_rule_decide(p_change bigint,
    p_decision text, p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       risk_rule_change;
    v_old   risk_rule;
    v_rule  bigint;
BEGIN
    SELECT * INTO c FROM risk_rule_change WHERE id = p_change FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no rule change %', p_change USING ERRCODE = 'MC044';
    END IF;
    PERFORM decision_allowed('rule change ' || c.id, c.status,
                             c.proposed_by, p_decision);

    IF p_decision = 'approve' THEN
        SELECT * INTO v_old FROM risk_rule r
        WHERE r.rule = c.rule
          AND r.currency IS NOT DISTINCT FROM c.currency
          AND r.provider IS NOT DISTINCT FROM c.provider
        FOR UPDATE;

        IF c.remove THEN
            IF v_old.id IS NULL THEN
                RAISE EXCEPTION 'rule change %: no such rule is in force '
                                'any more', c.id
                    USING ERRCODE = 'MC048';
            END IF;
            DELETE FROM risk_rule WHERE id = v_old.id;
        ELSE
            INSERT INTO risk_rule (rule, currency, provider, limit_minor,
                                   limit_count, change_id)
            VALUES (c.rule, c.currency, c.provider, c.limit_minor,
                    c.limit_count, c.id)
            ON CONFLICT (rule, currency, provider) DO UPDATE
            SET limit_minor = EXCLUDED.limit_minor,
                limit_count = EXCLUDED.limit_count,
                change_id = EXCLUDED.change_id
            RETURNING id INTO v_rule;
        END IF;
    END IF;

    UPDATE risk_rule_change
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note,
        rule_before = CASE WHEN v_old.id IS NOT NULL
                           THEN to_jsonb(v_old) END
    WHERE id = c.id AND status = 'proposed';
    RETURN v_rule;
END
$$;

CREATE FUNCTION mt5credit.risk_rules()
RETURNS TABLE (rule text, currency text, provider text, limit_text text,
               change_id bigint, proposed_by text, approved_by text,
               approved_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT r.rule, r.currency, r.provider,
           coalesce(r.limit_count::text,
                    trim_scale(r.limit_minor
                               / (10::numeric ^ k.minor_digits))::text),
           r.change_id, c.proposed_by, c.decided_by, c.decided_at
    FROM risk_rule r
    JOIN risk_rule_change c ON c.id = r.change_id
    LEFT JOIN currency k ON k.code = r.currency
    ORDER BY r.rule, r.currency NULLS FIRST, r.provider NULLS FIRST
$$;

-- every change, newest first: the rules' history
CREATE FUNCTION mt5credit.risk_rule_changes(p_limit integer)
RETURNS TABLE (id bigint, status text, rule text, currency text,
               provider text, limit_text text, remove boolean, note text,
               proposed_by text, proposed_at timestamptz, decided_by text,
               decided_at timestamptz, decision_note text,
               rule_before jsonb)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.status, c.rule, c.currency, c.provider,
           coalesce(c.limit_count::text,
                    trim_scale(c.limit_minor
                               / (10::numeric ^ k.minor_digits))::text),
           c.remove, c.note, c.proposed_by, c.proposed_at, c.decided_by,
           c.decided_at, c.decision_note, c.rule_before
    FROM risk_rule_change c
    LEFT JOIN currency k ON k.code = c.currency
    ORDER BY c.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 1000)
$$;

-- 4. judging a deposit's credit as it is born ------------------------------

-- one tripped rule, as the person reading the case sees it
CREATE FUNCTION mt5credit.risk_trip(r mt5credit.risk_rule,
    p_observed numeric, p_detail jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
               'rule', r.rule, 'rule_id', r.id, 'change', r.change_id,
               'currency', r.currency, 'provider', r.provider,
               'limit_minor', r.limit_minor, 'limit_count', r.limit_count,
               'observed', p_observed))
           || coalesce(p_detail, '{}')
$$;

CREATE FUNCTION mt5credit.risk_check() RETURNS trigger
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
BEGIN
    -- no rule for this credit, nothing to judge: ingest pays one probe
    IF NOT EXISTS (SELECT 1 FROM risk_rule k
                   WHERE (k.currency IS NULL OR k.currency = NEW.currency)
                     AND (k.provider IS NULL OR k.provider = NEW.provider))
    THEN
        RETURN NEW;
    END IF;

    SELECT d.client_id INTO STRICT v_client
    FROM deposit d WHERE d.id = NEW.deposit_id;

    -- a client's deposits are judged one at a time, each seeing the last
    PERFORM pg_advisory_xact_lock(
        hashtextextended('mt5credit.risk:' || v_client, 0));

    FOR r IN
        SELECT * FROM risk_rule k
        WHERE (k.currency IS NULL OR k.currency = NEW.currency)
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
        END IF;
    END LOOP;

    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := v_trips;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER mt5_credit_risk_check
    BEFORE INSERT ON mt5credit.mt5_credit
    FOR EACH ROW WHEN (NEW.kind = 'deposit')
    EXECUTE FUNCTION mt5credit.risk_check();

-- a login's deposits of the last day, found without reading the day's
-- every credit (that would make judging a day quadratic).  Built in the
-- migration's transaction, it holds writes to mt5_credit while it builds:
-- about a second per million credits here (docs/operations.md, "Upgrades")
CREATE INDEX mt5_credit_login_deposits_idx
    ON mt5credit.mt5_credit (mt5_server, mt5_login, created_at)
    WHERE kind = 'deposit';

-- named to fire after mt5_credit_log_insert (the birth in the history)
-- and before mt5_credit_payment_after_rewind (which looks up a pending
-- one first): a held credit is not pending, and is looked up on release
CREATE FUNCTION mt5credit.credit_on_hold() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_detail  text := current_setting('mt5credit.detail', true);
    v_actor   text := current_setting('mt5credit.actor', true);
    v_rows    integer;
BEGIN
    -- the inserter's transaction: its actor and detail are put back
    -- after; in an ingest_batch(), the element's own actor (062's map)
    PERFORM set_config('mt5credit.actor',
        coalesce(batch_entry('c' || NEW.id::text), v_actor, ''), true);
    PERFORM set_config('mt5credit.detail',
        (coalesce(nullif(v_detail, ''), '{}')::jsonb
         || jsonb_build_object('held_for', NEW.held_for))::text, true);
    UPDATE mt5_credit SET status = 'held'
    WHERE id = NEW.id AND status = 'pending';
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    PERFORM set_config('mt5credit.detail', coalesce(v_detail, ''), true);
    PERFORM set_config('mt5credit.actor', coalesce(v_actor, ''), true);
    IF v_rows <> 1 THEN
        RAISE EXCEPTION 'credit %: held as it was born, but it was not '
                        'pending', NEW.id
            USING ERRCODE = 'MC012';
    END IF;

    PERFORM open_case('risk_hold', 'medium', 'risk_hold:credit:' || NEW.id,
                      jsonb_build_object('held_for', NEW.held_for,
                                         'credit', jsonb_build_object(
                                             'id', NEW.id,
                                             'reference', NEW.reference,
                                             'mt5_server', NEW.mt5_server,
                                             'mt5_login', NEW.mt5_login)),
                      NEW.id, NEW.deposit_id, NULL,
                      NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;

CREATE TRIGGER mt5_credit_on_hold
    AFTER INSERT ON mt5credit.mt5_credit
    FOR EACH ROW WHEN (NEW.held_for IS NOT NULL)
    EXECUTE FUNCTION mt5credit.credit_on_hold();

-- 5. re-declared -----------------------------------------------------------

CREATE OR REPLACE FUNCTION mt5credit.case_propose(p_case bigint, p_action text, p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $_$
DECLARE
    c       "case" := desk_case(p_case);
    v_cr    mt5_credit;
    v_id    bigint;
    v_amount_minor  bigint;
BEGIN
    PERFORM desk_require_open(c);
    SELECT * INTO v_cr FROM mt5_credit
    WHERE id = coalesce(p_credit_id, c.credit_id);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'case %: which credit? none given and none on the '
                        'case', p_case USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'settle_failed' THEN
        -- 032: an unknown credit settled as failed, on evidence
        IF v_cr.status <> 'unknown' THEN
            RAISE EXCEPTION 'credit % is %: only an unknown credit is '
                            'settled', v_cr.id, v_cr.status
                USING ERRCODE = 'MC048';
        END IF;
        IF jsonb_array_length(coalesce(p_evidence, '[]')) = 0 THEN
            RAISE EXCEPTION 'settling credit % as failed needs evidence that '
                            'it has no deal (--evidence)', v_cr.id
                USING ERRCODE = 'MC048';
        END IF;
    END IF;
    -- 079: a hold is released or returned while the credit is held
    IF p_action IN ('release_hold', 'return_hold')
       AND v_cr.status <> 'held'
    THEN
        RAISE EXCEPTION 'credit % is %: only a held credit is released or '
                        'returned', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action = 'requeue_credit' AND v_cr.status <> 'failed' THEN
        RAISE EXCEPTION 'credit % is %: only a failed credit can be '
                        're-queued', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    -- a correction is claimed only once the credit it adjusts is done:
    -- proposed for one that is not, it would wait for ever (023)
    IF p_action IN ('correcting_credit', 'correcting_debit')
       AND v_cr.status <> 'done'
    THEN
        RAISE EXCEPTION 'credit % is %: a correction adjusts a done credit; '
                        'settle this one first', v_cr.id, v_cr.status
            USING ERRCODE = 'MC048';
    END IF;
    IF p_action IN ('correcting_credit', 'correcting_debit') THEN
        v_amount_minor := exact_minor(p_amount, v_cr.currency,
                                      'a correction', '12.50');
    END IF;

    -- 065: through the console, the person's code for this proposal
    PERFORM step_up_require('propose', p_case::text, p_action,
                            p_credit_id::text, p_amount);

    INSERT INTO money_proposal (case_id, action, credit_id, amount_minor,
                                currency, note, evidence, proposed_by)
    VALUES (p_case, p_action, v_cr.id,
            v_amount_minor,
            CASE WHEN p_action IN ('correcting_credit', 'correcting_debit')
                 THEN v_cr.currency END,
            p_note, coalesce(p_evidence, '[]'), mt5credit.person())
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = p_case;
    PERFORM desk_record(p_case, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'credit', v_cr.id,
                           'amount_minor', v_amount_minor,
                           'currency', v_cr.currency),
        p_note, p_evidence);
    RETURN v_id;
END
$_$;

CREATE OR REPLACE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text, p_note text) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    p       money_proposal;
    c       "case";
    v_cr    mt5_credit;
    v_new   bigint;
    v_rows  integer;
    v_from  timestamptz;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    c := desk_case(p.case_id);
    PERFORM decision_allowed('proposal ' || p.id, p.status, p.proposed_by,
                             p_decision);

    IF p_decision = 'approve' THEN
        -- 065: through the console, the person's code for this approval
        PERFORM step_up_require('approve', p_proposal::text);

        SELECT * INTO STRICT v_cr FROM mt5_credit WHERE id = p.credit_id
        FOR UPDATE;
        PERFORM set_config('mt5credit.actor', mt5credit.person(), true);
        PERFORM set_config('mt5credit.detail',
            jsonb_build_object('case', c.id, 'proposal', p.id,
                               'proposed_by', p.proposed_by,
                               'approved_by', mt5credit.person())::text, true);

        IF p.action = 'settle_done' THEN
            -- 033: the worker checks the deal at its next round; nothing
            -- is recorded until it has
            UPDATE mt5_credit
            SET next_check_at = clock_timestamp()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'settle_failed' THEN
            -- 032: an unknown credit two people found has no deal
            UPDATE mt5_credit
            SET status = 'failed', next_check_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'unknown';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer unknown: '
                                'nothing settled', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'requeue_credit' THEN
            UPDATE mt5_credit
            SET status = 'pending', claimed_at = NULL, claimed_by = NULL,
                lease_expires_at = NULL, updated_at = now()
            WHERE id = v_cr.id AND status = 'failed';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer failed: '
                                'nothing re-queued', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'release_hold' THEN
            -- 079: released, it goes where any new credit goes: to the
            -- queue, or, within a week of a rewind, to a lookup first (the
            -- lost timeline may have released and credited it already)
            v_from := (SELECT min(r.lost_from) FROM database_rewind r
                       WHERE r.at > clock_timestamp() - interval '7 days');
            UPDATE mt5_credit
            SET status = CASE WHEN v_from IS NULL THEN 'pending'
                              ELSE 'unknown' END,
                attempts = attempts + CASE WHEN v_from IS NULL THEN 0
                                           ELSE 1 END,
                lease_expires_at = CASE WHEN v_from IS NOT NULL
                                        THEN clock_timestamp() END,
                next_check_at = NULL,
                look_from = CASE WHEN v_from IS NOT NULL
                                 THEN least(coalesce(look_from, v_from),
                                            v_from)
                                 ELSE look_from END
            WHERE id = v_cr.id AND status = 'held';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer held: '
                                'nothing released', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSIF p.action = 'return_hold' THEN
            -- 079: never credited; the payment goes back to its source
            -- through the provider, which a person does there
            UPDATE mt5_credit
            SET status = 'failed', next_check_at = NULL
            WHERE id = v_cr.id AND status = 'held';
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            IF v_rows <> 1 THEN
                RAISE EXCEPTION 'credit % is % now, no longer held: '
                                'nothing returned', v_cr.id, v_cr.status
                    USING ERRCODE = 'MC048';
            END IF;
        ELSE
            INSERT INTO mt5_credit (kind, direction, original_credit_id,
                                    deposit_id, provider, provider_payment_id,
                                    mt5_server, mt5_login, amount_minor,
                                    currency, paid_amount_minor,
                                    paid_currency)
            VALUES ('correction',
                    CASE p.action WHEN 'correcting_credit' THEN 'credit'
                                  ELSE 'debit' END,
                    v_cr.id, v_cr.deposit_id, v_cr.provider,
                    'correction:' || p.id, v_cr.mt5_server, v_cr.mt5_login,
                    p.amount_minor, p.currency, p.amount_minor, p.currency)
            RETURNING id INTO v_new;
        END IF;
    END IF;

    UPDATE money_proposal
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note, result_credit_id = v_new
    WHERE id = p.id AND status = 'proposed';

    -- approved: the case waits for the worker's outcome and a person's
    -- resolution; rejected or withdrawn: back to whoever had it
    UPDATE "case"
    SET status = CASE WHEN p_decision = 'approve' THEN 'pending_resolution'
                      WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id;

    PERFORM desk_record(c.id, p_decision,
        jsonb_build_object('status', c.status, 'proposal', p.id,
                           'credit_status', v_cr.status),
        jsonb_build_object('proposal_status', p_decision,
                           'credit', p.credit_id,
                           'correction_credit', v_new),
        p_note, NULL);
    RETURN coalesce(v_new, p.credit_id);
END
$$;

CREATE OR REPLACE FUNCTION mt5credit.work_status() RETURNS TABLE(metric text, kind text, status text, value double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT 'credits', c.kind, c.status, count(*)::double precision
    FROM mt5_credit c GROUP BY c.kind, c.status
    UNION ALL
    SELECT 'oldest_age_seconds', NULL, c.status,
           coalesce(extract(epoch FROM now() - min(c.created_at)), 0)
    FROM mt5_credit c
    WHERE c.status IN ('pending', 'claimed', 'unknown', 'held')
    GROUP BY c.status
    UNION ALL
    -- 079: credits held, by the rule that held them (one credit under
    -- each rule it tripped) and where they are now
    SELECT 'holds', r->>'rule', c.status, count(*)::double precision
    FROM mt5_credit c, jsonb_array_elements(c.held_for) r
    WHERE c.held_for IS NOT NULL
    GROUP BY r->>'rule', c.status
    UNION ALL
    SELECT 'open_cases', k.kind, k.severity, count(*)::double precision
    FROM "case" k WHERE k.status <> 'resolved'
    GROUP BY k.kind, k.severity
    UNION ALL
    SELECT 'payouts', NULL, p.status, count(*)::double precision
    FROM payout p GROUP BY p.status
    UNION ALL
    SELECT 'payout_oldest_age_seconds', NULL, p.status,
           coalesce(extract(epoch FROM now() - min(p.created_at)), 0)
    FROM payout p
    WHERE p.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY p.status
    UNION ALL
    SELECT 'refunds', NULL, r.status, count(*)::double precision
    FROM withdrawal_refund r GROUP BY r.status
    UNION ALL
    SELECT 'refund_oldest_age_seconds', NULL, r.status,
           coalesce(extract(epoch FROM now() - min(r.created_at)), 0)
    FROM withdrawal_refund r
    WHERE r.status IN ('pending', 'sending', 'unknown', 'accepted')
    GROUP BY r.status
    UNION ALL
    SELECT 'done_total', l.kind, NULL, sum(l.n)::double precision
    FROM credit_latency l GROUP BY l.kind
    UNION ALL
    -- cumulative: each bound counts every credit at or below it; every
    -- bound is printed, also before the first credit
    SELECT 'latency_bucket', NULL, b.le,
           coalesce(sum(l.n) FILTER (WHERE b.le = '+Inf'
                                     OR (l.le <> '+Inf'
                                         AND l.le::numeric
                                             <= b.le::numeric)), 0)
    FROM (VALUES ('0.05'), ('0.1'), ('0.25'), ('0.5'), ('1'), ('2.5'),
                 ('5'), ('10'), ('30'), ('60'), ('300'), ('+Inf')) AS b (le)
    LEFT JOIN credit_latency l ON true
    GROUP BY b.le
    UNION ALL
    SELECT 'latency_sum', NULL, NULL,
           coalesce(sum(l.sum_ms), 0)::double precision / 1000
    FROM credit_latency l
    UNION ALL
    SELECT 'latency_count', NULL, NULL, coalesce(sum(l.n), 0)::double precision
    FROM credit_latency l
$$;

-- 6. who may do what ---------------------------------------------------------

REVOKE ALL ON FUNCTION mt5credit.credit_held_for_fixed() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.exact_minor(text, text, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.decision_allowed(text, text, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_rule_change_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_rule_propose(text, text, text, text,
                                                   boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_rule_decide(bigint, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_rules() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_rule_changes(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_trip(mt5credit.risk_rule, numeric,
                                           jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_check() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.credit_on_hold() FROM PUBLIC;

-- a rule is changed by people at the desk, one proposing, one deciding
GRANT EXECUTE ON FUNCTION mt5credit.risk_rule_propose(text, text, text,
                                                      text, boolean, text)
    TO mt5credit_operator;
GRANT EXECUTE ON FUNCTION mt5credit.risk_rule_decide(bigint, text, text)
    TO mt5credit_operator;
GRANT EXECUTE ON FUNCTION mt5credit.risk_rules()
    TO mt5credit_operator, mt5credit_reader;
GRANT EXECUTE ON FUNCTION mt5credit.risk_rule_changes(integer)
    TO mt5credit_operator, mt5credit_reader;
