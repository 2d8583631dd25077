--
-- 080: risk holds on withdrawals.  The same rules table and the same two
-- people as a deposit's hold (079), for money leaving.
--
-- Two rules:
--
--   withdrawal_amount   a withdrawal asking for more than the limit, in
--                       the withdrawal's currency;
--   withdrawal_trading  a withdrawal while the login traded less than the
--                       limit (in lots) since its last credited deposit:
--                       money in and out with little trading between.
--
-- The amount is judged as the withdrawal is asked, and again whenever the
-- client changes what is asked.  The trading is a fact only MT5 has: the
-- withdrawal notes the deposit it must be measured from (trading_after),
-- the worker reads the login's deals from that deposit's own deal on and
-- records what it found (withdrawal_trading_record()), and only then is
-- the rule judged.  Until the worker has looked, nobody can prepare the
-- withdrawal: no answer from MT5 is not "no trading", nor "enough".
--
-- A held withdrawal is a state of its own: it cannot be prepared,
-- approved, amended or rejected by one person, and no MT5 debit or
-- payout leg exists before approval (017), so none is sent.  Its
-- `withdrawal_hold` case is decided by two people through the case desk's
-- money_proposal: release_hold puts it back to `requested` (then the
-- usual maker and checker, whose plan refunds the deposits to their
-- source first, 042); return_hold rejects it and nothing leaves the MT5
-- account.
--
-- held_for grows and never changes: each hold adds what tripped, with the
-- figures and the hold's number, and each hold opens its own case.
--
-- case_propose() and case_decide() now dispatch: a withdrawal_hold case to
-- the withdrawal's functions here, any other to 079's definitions, which
-- are renamed credit_case_propose() and credit_case_decide() unchanged
-- (sql/structure.sql shows them under their new names).
--
-- Re-declared, this file holds their current definitions: risk_check()
-- (it judges deposits by the deposit rules only), risk_rule_propose(),
-- risk_rule_decide(), risk_rules(), risk_rule_changes(),
-- risk_rule_change_guard(), risk_trip(), money_proposal_guard(),
-- withdrawal_progress(), work_status().
--

-- 1. the rules ------------------------------------------------------------

-- a volume in MT5's unit (Volume: 1/10000 lot), typed in lots
ALTER TABLE mt5credit.risk_rule_change
    ADD COLUMN limit_volume bigint CHECK (limit_volume > 0),
    DROP CONSTRAINT risk_rule_change_rule_check,
    ADD CONSTRAINT risk_rule_change_rule_check
        CHECK (rule IN ('credit_amount', 'login_count_24h', 'login_sum_24h',
                        'client_count_24h', 'client_sum_24h',
                        'first_deposit', 'first_provider',
                        'withdrawal_amount', 'withdrawal_trading')),
    DROP CONSTRAINT risk_rule_change_check,
    ADD CONSTRAINT risk_rule_change_check
        CHECK (remove OR (limit_minor IS NOT NULL)
                         = (rule IN ('credit_amount', 'login_sum_24h',
                                     'client_sum_24h', 'withdrawal_amount'))),
    ADD CONSTRAINT risk_rule_change_volume
        CHECK (remove OR (limit_volume IS NOT NULL)
                         = (rule = 'withdrawal_trading')),
    DROP CONSTRAINT risk_rule_change_check2,
    ADD CONSTRAINT risk_rule_change_check2
        CHECK (NOT remove OR (limit_minor IS NULL AND limit_count IS NULL
                              AND limit_volume IS NULL)),
    DROP CONSTRAINT risk_rule_change_check3,
    ADD CONSTRAINT risk_rule_change_check3
        CHECK (rule NOT IN ('credit_amount', 'login_sum_24h',
                            'client_sum_24h', 'withdrawal_amount')
               OR currency IS NOT NULL);

ALTER TABLE mt5credit.risk_rule
    ADD COLUMN limit_volume bigint CHECK (limit_volume > 0),
    DROP CONSTRAINT risk_rule_check,
    ADD CONSTRAINT risk_rule_check
        CHECK ((limit_minor IS NOT NULL)
               = (rule IN ('credit_amount', 'login_sum_24h',
                           'client_sum_24h', 'withdrawal_amount'))),
    ADD CONSTRAINT risk_rule_volume
        CHECK ((limit_volume IS NOT NULL) = (rule = 'withdrawal_trading')),
    DROP CONSTRAINT risk_rule_check2,
    ADD CONSTRAINT risk_rule_check2
        CHECK (rule NOT IN ('credit_amount', 'login_sum_24h',
                            'client_sum_24h', 'withdrawal_amount')
               OR currency IS NOT NULL);

COMMENT ON COLUMN mt5credit.risk_rule.limit_volume IS
    'withdrawal_trading''s least volume, in MT5''s unit of 1/10000 lot '
    '(080): less traded since the last deposit holds the withdrawal.';

CREATE OR REPLACE FUNCTION mt5credit.risk_rule_change_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF (NEW.rule, NEW.currency, NEW.provider, NEW.limit_minor,
        NEW.limit_count, NEW.limit_volume, NEW.remove, NEW.note,
        NEW.proposed_by, NEW.proposed_at)
       IS DISTINCT FROM
       (OLD.rule, OLD.currency, OLD.provider, OLD.limit_minor,
        OLD.limit_count, OLD.limit_volume, OLD.remove, OLD.note,
        OLD.proposed_by, OLD.proposed_at)
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

-- lots as typed ('0.5') to MT5's volume unit, exactly: 0.00001 is refused
CREATE FUNCTION mt5credit.exact_volume(p_lots text, p_what text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF p_lots IS NULL OR p_lots !~ '^[0-9]{1,9}(\.[0-9]{1,4})?$'
       OR p_lots::numeric = 0
    THEN
        RAISE EXCEPTION '% needs a volume in lots like 0.5, at most 4 '
                        'decimals, not "%"', p_what, coalesce(p_lots, '')
            USING ERRCODE = 'MC048';
    END IF;
    RETURN (p_lots::numeric * 10000)::bigint;
END
$$;

-- one person proposes; p_limit is text so that it is exact: major units
-- ('5000.00'), a count ('3') or lots ('0.5'); NULL for the first_* rules
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
                                  limit_count, limit_volume, remove, note,
                                  proposed_by)
    VALUES (p_rule, p_currency, p_provider, v_minor, v_count, v_volume,
            coalesce(p_remove, false), p_note, mt5credit.person())
    RETURNING id INTO v_id;
    RETURN v_id;
END
$_$;

-- another person decides; approved, the change is in force at once for
-- every credit born, and withdrawal asked or looked at, after this
-- transaction commits
CREATE OR REPLACE FUNCTION mt5credit.risk_rule_decide(p_change bigint,
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
                                   limit_count, limit_volume, change_id)
            VALUES (c.rule, c.currency, c.provider, c.limit_minor,
                    c.limit_count, c.limit_volume, c.id)
            ON CONFLICT (rule, currency, provider) DO UPDATE
            SET limit_minor = EXCLUDED.limit_minor,
                limit_count = EXCLUDED.limit_count,
                limit_volume = EXCLUDED.limit_volume,
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

-- a rule's limit as a person types it: a count, lots, or major units
CREATE FUNCTION mt5credit.risk_limit_text(p_minor bigint, p_count integer,
    p_volume bigint, p_currency text)
RETURNS text
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT coalesce(p_count::text,
                    trim_scale(p_volume / 10000.0)::text,
                    (SELECT trim_scale(p_minor
                                       / (10::numeric ^ k.minor_digits))::text
                     FROM currency k WHERE k.code = p_currency))
$$;

CREATE OR REPLACE FUNCTION mt5credit.risk_rules()
RETURNS TABLE (rule text, currency text, provider text, limit_text text,
               change_id bigint, proposed_by text, approved_by text,
               approved_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT r.rule, r.currency, r.provider,
           risk_limit_text(r.limit_minor, r.limit_count, r.limit_volume,
                           r.currency),
           r.change_id, c.proposed_by, c.decided_by, c.decided_at
    FROM risk_rule r
    JOIN risk_rule_change c ON c.id = r.change_id
    ORDER BY r.rule, r.currency NULLS FIRST, r.provider NULLS FIRST
$$;

-- every change, newest first: the rules' history
CREATE OR REPLACE FUNCTION mt5credit.risk_rule_changes(p_limit integer)
RETURNS TABLE (id bigint, status text, rule text, currency text,
               provider text, limit_text text, remove boolean, note text,
               proposed_by text, proposed_at timestamptz, decided_by text,
               decided_at timestamptz, decision_note text,
               rule_before jsonb)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT c.id, c.status, c.rule, c.currency, c.provider,
           risk_limit_text(c.limit_minor, c.limit_count, c.limit_volume,
                           c.currency),
           c.remove, c.note, c.proposed_by, c.proposed_at, c.decided_by,
           c.decided_at, c.decision_note, c.rule_before
    FROM risk_rule_change c
    ORDER BY c.id DESC
    LIMIT least(greatest(coalesce(p_limit, 50), 1), 1000)
$$;

-- one tripped rule, as the person reading the case sees it
CREATE OR REPLACE FUNCTION mt5credit.risk_trip(r mt5credit.risk_rule,
    p_observed numeric, p_detail jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
               'rule', r.rule, 'rule_id', r.id, 'change', r.change_id,
               'currency', r.currency, 'provider', r.provider,
               'limit_minor', r.limit_minor, 'limit_count', r.limit_count,
               'limit_volume', r.limit_volume, 'observed', p_observed))
           || coalesce(p_detail, '{}')
$$;

-- 2. the withdrawal's hold ---------------------------------------------------

ALTER TABLE mt5credit.withdrawal
    ADD COLUMN held_for jsonb,
    ADD COLUMN trading_after bigint REFERENCES mt5credit.mt5_credit (id),
    ADD COLUMN trading jsonb,
    DROP CONSTRAINT withdrawal_status_check,
    ADD CONSTRAINT withdrawal_status_check
        CHECK (status IN ('requested', 'prepared', 'approved', 'rejected',
                          'cancelled', 'held')),
    ADD CONSTRAINT withdrawal_held_for_shape
        CHECK (held_for IS NULL
               OR (jsonb_typeof(held_for) = 'array'
                   AND jsonb_array_length(held_for) > 0)),
    ADD CONSTRAINT withdrawal_held_has_reason
        CHECK (status <> 'held' OR held_for IS NOT NULL),
    ADD CONSTRAINT withdrawal_trading_shape
        CHECK (trading IS NULL
               OR (trading_after IS NOT NULL
                   AND jsonb_typeof(trading) = 'object')),
    -- the trading it must be judged on is read before anyone prepares it
    ADD CONSTRAINT withdrawal_trading_looked
        CHECK (status NOT IN ('prepared', 'approved')
               OR trading_after IS NULL OR trading IS NOT NULL);

COMMENT ON COLUMN mt5credit.withdrawal.held_for IS
    'Every risk rule that held this withdrawal, each with its figures and '
    'the hold''s number (080); NULL: never held.  It only grows.';
COMMENT ON COLUMN mt5credit.withdrawal.trading_after IS
    'The login''s last credited deposit when the withdrawal was asked, '
    'under a withdrawal_trading rule: the trading since its deal is read '
    'from MT5 before the withdrawal can be prepared (080).';
COMMENT ON COLUMN mt5credit.withdrawal.trading IS
    'What the worker read from MT5: the volume and count of the login''s '
    'trades after trading_after''s deal, and the window (080).';

INSERT INTO mt5credit.withdrawal_transition VALUES
    ('requested', 'held'),
    ('prepared',  'held'),       -- the client asked for more (amend)
    ('held',      'requested'),  -- two people released it
    ('held',      'rejected');   -- two people returned it

ALTER TABLE mt5credit.money_proposal
    ALTER COLUMN credit_id DROP NOT NULL,
    ADD COLUMN withdrawal_id bigint REFERENCES mt5credit.withdrawal (id),
    ADD CONSTRAINT money_proposal_one_subject
        CHECK ((credit_id IS NULL) <> (withdrawal_id IS NULL)),
    ADD CONSTRAINT money_proposal_withdrawal_holds_only
        CHECK (withdrawal_id IS NULL
               OR action IN ('release_hold', 'return_hold'));

CREATE OR REPLACE FUNCTION mt5credit.money_proposal_guard() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.case_id, NEW.action, NEW.credit_id, NEW.withdrawal_id,
        NEW.amount_minor, NEW.currency, NEW.note, NEW.evidence,
        NEW.proposed_by, NEW.proposed_at, NEW.deal_ticket)
       IS DISTINCT FROM
       (OLD.case_id, OLD.action, OLD.credit_id, OLD.withdrawal_id,
        OLD.amount_minor, OLD.currency, OLD.note, OLD.evidence,
        OLD.proposed_by, OLD.proposed_at, OLD.deal_ticket)
    THEN
        RAISE EXCEPTION 'proposal % cannot change after it was made: '
                        'withdraw it and propose again', OLD.id
            USING ERRCODE = 'MC040';
    END IF;
    IF OLD.status <> 'proposed' THEN
        RAISE EXCEPTION 'proposal % was already %', OLD.id, OLD.status
            USING ERRCODE = 'MC041';
    END IF;
    RETURN NEW;
END
$$;

-- what held it is evidence: each hold is added, none is changed or taken
CREATE FUNCTION mt5credit.withdrawal_held_for_grows() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF OLD.held_for IS NOT NULL
       AND (NEW.held_for IS NULL
            OR jsonb_array_length(NEW.held_for)
               < jsonb_array_length(OLD.held_for)
            OR (SELECT jsonb_agg(e ORDER BY n)
                FROM jsonb_array_elements(NEW.held_for)
                     WITH ORDINALITY AS x (e, n)
                WHERE n <= jsonb_array_length(OLD.held_for))
               <> OLD.held_for)
    THEN
        RAISE EXCEPTION 'withdrawal %: why it was held never changes',
                        OLD.reference USING ERRCODE = 'MC011';
    END IF;
    IF OLD.trading IS NOT NULL
       AND NEW.trading IS DISTINCT FROM OLD.trading
       OR NEW.trading_after IS DISTINCT FROM OLD.trading_after
    THEN
        RAISE EXCEPTION 'withdrawal %: the trading it was judged on never '
                        'changes', OLD.reference USING ERRCODE = 'MC011';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER withdrawal_held_for_grows
    BEFORE UPDATE OF held_for, trading, trading_after ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_held_for_grows();

-- the client sees a held withdrawal as in review, like any other waiting
-- for people: telling a client their payment is under a compliance hold
-- is what AML law calls tipping off
CREATE OR REPLACE FUNCTION mt5credit.withdrawal_progress(p_client_id text, p_reference text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
    SELECT CASE
           WHEN w.status IN ('requested', 'prepared', 'held') THEN 'in_review'
           WHEN w.status IN ('rejected', 'cancelled') THEN w.status
           WHEN c.status = 'failed' THEN 'declined'
           WHEN c.status IS DISTINCT FROM 'done' OR l.n = 0 THEN 'processing'
           WHEN l.failed > 0 THEN 'under_review'
           WHEN l.arrived = l.n THEN 'paid'
           WHEN l.sent = l.n THEN 'sent'
           ELSE 'processing'
           END
    FROM withdrawal w
    LEFT JOIN mt5_credit c ON c.withdrawal_id = w.id AND c.kind = 'withdrawal'
    CROSS JOIN LATERAL (
        SELECT count(*) AS n,
               count(*) FILTER (WHERE s IN ('failed', 'rejected')) AS failed,
               count(*) FILTER (WHERE s IN ('succeeded', 'paid')) AS arrived,
               count(*) FILTER (WHERE s IN ('accepted', 'succeeded',
                                            'paid')) AS sent
        FROM (SELECT p.status AS s FROM payout p WHERE p.withdrawal_id = w.id
              UNION ALL
              SELECT r.status FROM withdrawal_refund r
              WHERE r.withdrawal_id = w.id) legs
    ) l
    WHERE w.client_id = p_client_id AND w.reference = p_reference
$$;

-- 3. judging a withdrawal ----------------------------------------------------

-- the amount rule's trips for what is asked now; p_hold numbers them
CREATE FUNCTION mt5credit.withdrawal_amount_trips(w mt5credit.withdrawal,
    p_hold integer)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT coalesce(jsonb_agg(risk_trip(r, w.amount_minor,
                                        jsonb_build_object('hold', p_hold))
                              ORDER BY r.id), '[]')
    FROM risk_rule r
    WHERE r.rule = 'withdrawal_amount'
      AND r.currency = w.currency
      AND (r.provider IS NULL OR r.provider = w.provider)
      AND w.amount_minor > r.limit_minor
$$;

-- asked: the amount judged, and the deposit the trading is measured from
-- noted; amended: the amount judged again.  Fires after withdrawal_guard,
-- which has already put an amended withdrawal back to requested.
CREATE FUNCTION mt5credit.withdrawal_risk_check() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_trips  jsonb;
    v_hold   integer := coalesce(jsonb_array_length(NEW.held_for), 0) + 1;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF EXISTS (SELECT 1 FROM risk_rule r
                   WHERE r.rule = 'withdrawal_trading'
                     AND (r.currency IS NULL OR r.currency = NEW.currency)
                     AND (r.provider IS NULL OR r.provider = NEW.provider))
        THEN
            SELECT c.id INTO NEW.trading_after
            FROM mt5_credit c
            WHERE c.mt5_server = NEW.mt5_server
              AND c.mt5_login = NEW.mt5_login
              AND c.kind = 'deposit' AND c.status = 'done'
            ORDER BY c.mt5_deal_ticket DESC
            LIMIT 1;
        END IF;
    ELSIF NEW.status = 'prepared' AND OLD.status <> 'prepared'
          AND NEW.trading_after IS NOT NULL AND NEW.trading IS NULL
    THEN
        RAISE EXCEPTION 'withdrawal % waits for the worker to read the '
                        'login''s trading from MT5 (rule '
                        'withdrawal_trading): it cannot be prepared yet',
                        NEW.reference USING ERRCODE = 'MC073';
    ELSIF NEW.status = 'prepared' AND OLD.status <> 'prepared'
          AND NEW.trading_after IS NOT NULL
          AND EXISTS (SELECT 1 FROM mt5_credit c, mt5_credit a
                      WHERE a.id = NEW.trading_after
                        AND c.mt5_server = NEW.mt5_server
                        AND c.mt5_login = NEW.mt5_login
                        AND c.kind = 'deposit' AND c.status = 'done'
                        AND c.mt5_deal_ticket > a.mt5_deal_ticket)
    THEN
        -- asked while a deposit was on its way: the trading read was
        -- since the one before, not since the money it would take out
        RAISE EXCEPTION 'withdrawal %: a deposit was credited to its login '
                        'after it was asked, so its trading was not read '
                        'since that deposit (rule withdrawal_trading): '
                        'reject it and let the client ask again',
                        NEW.reference USING ERRCODE = 'MC073';
    ELSIF (NEW.amount_minor, NEW.currency, NEW.provider)
          IS NOT DISTINCT FROM (OLD.amount_minor, OLD.currency, OLD.provider)
          OR NEW.status <> 'requested'
    THEN
        RETURN NEW;
    END IF;

    v_trips := withdrawal_amount_trips(NEW, v_hold);
    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := coalesce(NEW.held_for, '[]') || v_trips;
        NEW.status := 'held';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER withdrawal_risk_check
    BEFORE INSERT OR UPDATE ON mt5credit.withdrawal
    FOR EACH ROW EXECUTE FUNCTION mt5credit.withdrawal_risk_check();

-- a hold added: its own case, for two people
CREATE FUNCTION mt5credit.withdrawal_on_hold() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_hold   integer := jsonb_array_length(NEW.held_for);
BEGIN
    PERFORM open_case('withdrawal_hold', 'medium',
        'withdrawal_hold:' || NEW.id || ':' || v_hold,
        jsonb_build_object(
            'held_for', (SELECT jsonb_agg(e) FROM jsonb_array_elements(
                                                       NEW.held_for) e
                         WHERE (e->>'hold')::integer = v_hold),
            'withdrawal', jsonb_build_object(
                'id', NEW.id, 'reference', NEW.reference,
                'client', NEW.client_id, 'provider', NEW.provider,
                'mt5_server', NEW.mt5_server, 'mt5_login', NEW.mt5_login,
                'destination', NEW.destination, 'hold', v_hold),
            'trading', NEW.trading),
        NULL, NULL, NULL, NEW.amount_minor, NEW.currency);
    RETURN NULL;
END
$$;

CREATE TRIGGER withdrawal_on_hold
    AFTER INSERT ON mt5credit.withdrawal
    FOR EACH ROW WHEN (NEW.status = 'held')
    EXECUTE FUNCTION mt5credit.withdrawal_on_hold();
-- (no column list: an amend names the amount, and the hold is the
-- trigger's own change)
CREATE TRIGGER withdrawal_on_hold_again
    AFTER UPDATE ON mt5credit.withdrawal
    FOR EACH ROW
    WHEN (NEW.status = 'held'
          AND jsonb_array_length(NEW.held_for)
              > coalesce(jsonb_array_length(OLD.held_for), 0))
    EXECUTE FUNCTION mt5credit.withdrawal_on_hold();

-- 4. the worker reads the trading ----------------------------------------

-- withdrawals whose trading is still to be read, on these servers, oldest
-- first, with the deal the window starts from
CREATE FUNCTION mt5credit.withdrawal_trading_due(p_servers text[],
    p_limit integer)
RETURNS TABLE (id bigint, reference text, mt5_server text,
               mt5_login bigint, after_credit bigint, after_ticket bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    SELECT w.id, w.reference, w.mt5_server, w.mt5_login, c.id,
           c.mt5_deal_ticket
    FROM withdrawal w
    JOIN mt5_credit c ON c.id = w.trading_after
    WHERE w.trading_after IS NOT NULL AND w.trading IS NULL
      AND w.status IN ('requested', 'held')
      AND w.mt5_server = ANY (p_servers)
    ORDER BY w.id
    LIMIT least(greatest(coalesce(p_limit, 20), 1), 100)
$$;

-- What the worker read: p_volume (1/10000 lot) and p_deals trades of the
-- login after the deal p_after_ticket, in [p_from, p_to] server seconds.
-- Judged now against the rule now in force; returns 'passed', 'held', or
-- 'closed' (decided meanwhile: nothing recorded).
CREATE FUNCTION mt5credit.withdrawal_trading_record(p_withdrawal bigint,
    p_after_ticket bigint, p_volume bigint, p_deals integer, p_from bigint,
    p_to bigint)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w        withdrawal;
    r        risk_rule;
    v_seen   jsonb;
    v_hold   integer;
BEGIN
    SELECT * INTO w FROM withdrawal WHERE id = p_withdrawal FOR UPDATE;
    IF NOT FOUND OR w.trading_after IS NULL THEN
        RAISE EXCEPTION 'withdrawal % has no trading to read', p_withdrawal
            USING ERRCODE = 'MC073';
    END IF;
    IF w.trading IS NOT NULL OR w.status NOT IN ('requested', 'held') THEN
        RETURN 'closed';
    END IF;
    IF p_after_ticket IS DISTINCT FROM
       (SELECT c.mt5_deal_ticket FROM mt5_credit c
        WHERE c.id = w.trading_after)
    THEN
        RAISE EXCEPTION 'withdrawal %: trading read after deal %, not '
                        'after its deposit''s deal', w.reference,
                        p_after_ticket USING ERRCODE = 'MC073';
    END IF;
    IF p_volume < 0 OR p_deals < 0 OR p_to < p_from THEN
        RAISE EXCEPTION 'withdrawal %: an impossible reading', w.reference
            USING ERRCODE = 'MC073';
    END IF;

    v_seen := jsonb_build_object('after_credit', w.trading_after,
                                 'after_deal', p_after_ticket,
                                 'volume', p_volume, 'deals', p_deals,
                                 'from', p_from, 'to', p_to,
                                 'read_at', clock_timestamp());

    -- the strictest rule in force for it, if any is left
    SELECT * INTO r FROM risk_rule k
    WHERE k.rule = 'withdrawal_trading'
      AND (k.currency IS NULL OR k.currency = w.currency)
      AND (k.provider IS NULL OR k.provider = w.provider)
    ORDER BY k.limit_volume DESC, k.id
    LIMIT 1;

    IF r.id IS NULL OR p_volume >= r.limit_volume THEN
        UPDATE withdrawal SET trading = v_seen WHERE id = w.id;
        RETURN 'passed';
    END IF;

    v_hold := coalesce(jsonb_array_length(w.held_for), 0) + 1;
    UPDATE withdrawal
    SET trading = v_seen, status = 'held',
        held_for = coalesce(held_for, '[]')
                   || jsonb_build_array(risk_trip(r, p_volume,
                          v_seen || jsonb_build_object('hold', v_hold)))
    WHERE id = w.id;
    RETURN 'held';
END
$$;

-- 5. two people decide a withdrawal's hold ----------------------------------

ALTER FUNCTION mt5credit.case_propose(bigint, text, bigint, text, text,
                                      jsonb)
    RENAME TO credit_case_propose;
ALTER FUNCTION mt5credit.case_decide(bigint, text, text)
    RENAME TO credit_case_decide;
REVOKE ALL ON FUNCTION mt5credit.credit_case_propose(bigint, text, bigint,
    text, text, jsonb) FROM mt5credit_operator;
REVOKE ALL ON FUNCTION mt5credit.credit_case_decide(bigint, text, text)
    FROM mt5credit_operator;

-- A case decides the hold it was opened for, and only while that is the
-- withdrawal's last: released on an older case, a hold added since (the
-- worker's trading reading) would go undecided.
CREATE FUNCTION mt5credit.withdrawal_hold_current(c mt5credit."case",
    w mt5credit.withdrawal)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF w.status = 'held'
       AND (c.details->'withdrawal'->>'hold')::integer
           IS DISTINCT FROM jsonb_array_length(w.held_for)
    THEN
        RAISE EXCEPTION 'case %: withdrawal % was held again since (hold '
                        '%, this case is for hold %): decide it on the '
                        'newest hold''s case', c.id, w.reference,
                        jsonb_array_length(w.held_for),
                        c.details->'withdrawal'->>'hold'
            USING ERRCODE = 'MC048';
    END IF;
END
$$;

-- A hold's case is not resolved while what it holds is still held: one
-- person resolving it would leave the money held with no case to decide
-- it on (two people release or return it first).
CREATE FUNCTION mt5credit.hold_case_guard() RETURNS trigger
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    IF NEW.kind = 'risk_hold'
       AND EXISTS (SELECT 1 FROM mt5_credit k
                   WHERE k.id = NEW.credit_id AND k.status = 'held')
       OR NEW.kind = 'withdrawal_hold'
          AND EXISTS (SELECT 1 FROM withdrawal w
                      WHERE w.id = (NEW.details->'withdrawal'->>'id')::bigint
                        AND w.status = 'held'
                        AND jsonb_array_length(w.held_for)
                            = (NEW.details->'withdrawal'->>'hold')::integer)
    THEN
        RAISE EXCEPTION 'case %: what it holds is still held; two people '
                        'release or return it first', NEW.id
            USING ERRCODE = 'MC048';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER case_hold_decided_first
    BEFORE UPDATE OF status ON mt5credit."case"
    FOR EACH ROW
    WHEN (NEW.status = 'resolved' AND OLD.status <> 'resolved'
          AND NEW.kind IN ('risk_hold', 'withdrawal_hold'))
    EXECUTE FUNCTION mt5credit.hold_case_guard();

CREATE FUNCTION mt5credit.withdrawal_case_propose(c mt5credit."case",
    p_action text, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    w     withdrawal;
    v_id  bigint;
BEGIN
    SELECT * INTO STRICT w FROM withdrawal
    WHERE id = (c.details->'withdrawal'->>'id')::bigint;
    IF p_action NOT IN ('release_hold', 'return_hold') THEN
        RAISE EXCEPTION 'case %: a withdrawal''s hold is released or '
                        'returned, nothing else (not %)', c.id, p_action
            USING ERRCODE = 'MC048';
    END IF;
    IF w.status <> 'held' THEN
        RAISE EXCEPTION 'withdrawal % is %: only a held withdrawal is '
                        'released or returned', w.reference, w.status
            USING ERRCODE = 'MC048';
    END IF;
    PERFORM withdrawal_hold_current(c, w);

    PERFORM step_up_require('propose', c.id::text, p_action, NULL, NULL);

    INSERT INTO money_proposal (case_id, action, withdrawal_id, note,
                                evidence, proposed_by)
    VALUES (c.id, p_action, w.id, p_note, coalesce(p_evidence, '[]'),
            mt5credit.person())
    RETURNING id INTO v_id;

    UPDATE "case" SET status = 'pending_resolution' WHERE id = c.id;
    PERFORM desk_record(c.id, 'propose',
        jsonb_build_object('status', c.status),
        jsonb_build_object('status', 'pending_resolution', 'proposal', v_id,
                           'action', p_action, 'withdrawal', w.id),
        p_note, p_evidence);
    RETURN v_id;
END
$$;

CREATE FUNCTION mt5credit.withdrawal_case_decide(p mt5credit.money_proposal,
    p_decision text, p_note text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c       "case" := desk_case(p.case_id);
    w       withdrawal;
    v_rows  integer;
BEGIN
    PERFORM decision_allowed('proposal ' || p.id, p.status, p.proposed_by,
                             p_decision);
    SELECT * INTO STRICT w FROM withdrawal WHERE id = p.withdrawal_id
    FOR UPDATE;

    IF p_decision = 'approve' THEN
        PERFORM step_up_require('approve', p.id::text);
        PERFORM withdrawal_hold_current(c, w);
        -- released: asked again, for the usual maker and checker;
        -- returned: rejected, nothing leaves the MT5 account
        UPDATE withdrawal
        SET status = CASE p.action WHEN 'release_hold' THEN 'requested'
                                   ELSE 'rejected' END,
            decided_by = CASE p.action WHEN 'return_hold'
                              THEN mt5credit.person() END,
            note = CASE p.action WHEN 'return_hold' THEN p.note
                                 ELSE note END
        WHERE id = w.id AND status = 'held';
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        IF v_rows <> 1 THEN
            RAISE EXCEPTION 'withdrawal % is % now, no longer held: '
                            'nothing decided', w.reference, w.status
                USING ERRCODE = 'MC048';
        END IF;
    END IF;

    UPDATE money_proposal
    SET status = CASE p_decision WHEN 'approve' THEN 'approved'
                                 WHEN 'reject' THEN 'rejected'
                                 ELSE 'withdrawn' END,
        decided_by = mt5credit.person(), decided_at = clock_timestamp(),
        decision_note = p_note
    WHERE id = p.id AND status = 'proposed';

    UPDATE "case"
    SET status = CASE WHEN p_decision = 'approve' THEN 'pending_resolution'
                      WHEN c.assigned_to IS NOT NULL THEN 'assigned'
                      ELSE 'open' END
    WHERE id = c.id;

    PERFORM desk_record(c.id, p_decision,
        jsonb_build_object('status', c.status, 'proposal', p.id,
                           'withdrawal_status', w.status),
        jsonb_build_object('proposal_status', p_decision,
                           'withdrawal', w.id),
        p_note, NULL);
    RETURN w.id;
END
$$;

-- the desk's two entry points: a withdrawal's hold here, the rest as 079
CREATE FUNCTION mt5credit.case_propose(p_case bigint, p_action text,
    p_credit_id bigint, p_amount text, p_note text, p_evidence jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    c  "case" := desk_case(p_case);
BEGIN
    IF c.kind <> 'withdrawal_hold' THEN
        RETURN credit_case_propose(p_case, p_action, p_credit_id, p_amount,
                                   p_note, p_evidence);
    END IF;
    PERFORM desk_require_open(c);
    IF p_credit_id IS NOT NULL OR p_amount IS NOT NULL THEN
        RAISE EXCEPTION 'case %: a withdrawal''s hold takes no credit and '
                        'no amount', p_case USING ERRCODE = 'MC048';
    END IF;
    RETURN withdrawal_case_propose(c, p_action, p_note, p_evidence);
END
$$;

CREATE FUNCTION mt5credit.case_decide(p_proposal bigint, p_decision text,
    p_note text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    p  money_proposal;
BEGIN
    SELECT * INTO p FROM money_proposal WHERE id = p_proposal FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no proposal %', p_proposal USING ERRCODE = 'MC044';
    END IF;
    IF p.withdrawal_id IS NULL THEN
        RETURN credit_case_decide(p_proposal, p_decision, p_note);
    END IF;
    RETURN withdrawal_case_decide(p, p_decision, p_note);
END
$$;

-- 6. the deposit rules judge deposits only -----------------------------------

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
BEGIN
    -- no rule for this credit, nothing to judge: ingest pays one probe
    IF NOT EXISTS (SELECT 1 FROM risk_rule k
                   WHERE k.rule NOT IN ('withdrawal_amount',
                                        'withdrawal_trading')
                     AND (k.currency IS NULL OR k.currency = NEW.currency)
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
        END IF;
    END LOOP;

    IF jsonb_array_length(v_trips) > 0 THEN
        NEW.held_for := v_trips;
    END IF;
    RETURN NEW;
END
$$;

-- 7. what is held, for the metrics -------------------------------------------

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
    -- 080: withdrawals held, the same way (a withdrawal under each rule
    -- of each of its holds), and the oldest still held
    SELECT 'withdrawal_holds', r->>'rule', w.status,
           count(*)::double precision
    FROM withdrawal w, jsonb_array_elements(w.held_for) r
    WHERE w.held_for IS NOT NULL
    GROUP BY r->>'rule', w.status
    UNION ALL
    SELECT 'withdrawal_oldest_age_seconds', NULL, w.status,
           coalesce(extract(epoch FROM now() - min(w.updated_at)), 0)
    FROM withdrawal w
    WHERE w.status IN ('requested', 'prepared', 'held')
    GROUP BY w.status
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

-- 8. who may do what ---------------------------------------------------------

REVOKE ALL ON FUNCTION mt5credit.exact_volume(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.risk_limit_text(bigint, integer, bigint,
                                                 text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_held_for_grows() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_amount_trips(
    mt5credit.withdrawal, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_risk_check() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_on_hold() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_trading_due(text[], integer)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_trading_record(bigint, bigint,
    bigint, integer, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_hold_current(mt5credit."case",
    mt5credit.withdrawal) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.hold_case_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_case_propose(mt5credit."case",
    text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.withdrawal_case_decide(
    mt5credit.money_proposal, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.case_propose(bigint, text, bigint, text,
    text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.case_decide(bigint, text, text)
    FROM PUBLIC;

-- the desk proposes and decides, as before 080
GRANT EXECUTE ON FUNCTION mt5credit.case_propose(bigint, text, bigint, text,
    text, jsonb) TO mt5credit_operator;
GRANT EXECUTE ON FUNCTION mt5credit.case_decide(bigint, text, text)
    TO mt5credit_operator;

-- the worker, which reads MT5, reads the trading and records it
GRANT EXECUTE ON FUNCTION mt5credit.withdrawal_trading_due(text[], integer)
    TO mt5credit_worker;
GRANT EXECUTE ON FUNCTION mt5credit.withdrawal_trading_record(bigint, bigint,
    bigint, integer, bigint, bigint) TO mt5credit_worker;
