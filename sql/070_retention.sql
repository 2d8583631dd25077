-- migrate: as-migrator
--
-- 070: raw webhook bodies are not kept for ever.
--
-- A provider's event carries personal data (names, emails, card
-- details' last digits, addresses), and every body was kept for ever.
-- What the money needs of an old event is what ingest() decided, its
-- provider key and its digest: enough to show that these bytes, and no
-- others, were received, and to refuse another body under its key.  So
-- an event's body may be redacted, by retention_redact(days), once:
--   - it was received more than `days` ago, at least 90 (reconciliation
--     looks back at most 62 days, and replays a settled payment's event);
--   - its credit, if any, is done or failed (nothing will read it to
--     credit);
--   - no open case names the event or its credit (a person may need it).
-- The body becomes empty and body_redacted_at says when; body_sha256
-- stays.  A conflicting body stored beside it (005) goes the same way.
-- Nothing else of an event ever changes: the guard allows that one
-- update and no other.
--
-- mt5credit_retention is the role of `mt5credit retention`; it may call
-- retention_redact() and nothing else.
--
-- Re-declared, this file holds its current definition:
--   webhook_event_guard()   (051's, allowing the redaction)
--

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles
                   WHERE rolname = 'mt5credit_retention')
    THEN
        CREATE ROLE mt5credit_retention NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA mt5credit TO mt5credit_retention;

SET ROLE mt5credit_owner;

ALTER TABLE mt5credit.webhook_event
    ADD COLUMN body_redacted_at timestamptz,
    ADD CONSTRAINT webhook_event_redacted_empty
        CHECK (body_redacted_at IS NULL OR raw_body = ''::bytea);

COMMENT ON COLUMN mt5credit.webhook_event.body_redacted_at IS
    'When its body was removed under the retention policy (070); its '
    'digest stays';

ALTER TABLE mt5credit.webhook_event_conflict
    ADD COLUMN body_redacted_at timestamptz,
    ADD CONSTRAINT webhook_event_conflict_redacted_empty
        CHECK (body_redacted_at IS NULL OR raw_body = ''::bytea);

-- 051's guard: the content is immutable, except its one redaction
CREATE OR REPLACE FUNCTION mt5credit.webhook_event_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.provider_event_id, NEW.event_type,
        NEW.body_sha256, NEW.signature_scheme, NEW.signed_at, NEW.received_at,
        NEW.request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.provider_event_id, OLD.event_type,
        OLD.body_sha256, OLD.signature_scheme, OLD.signed_at, OLD.received_at,
        OLD.request_id)
       OR (NEW.raw_body IS DISTINCT FROM OLD.raw_body
           AND NOT (OLD.body_redacted_at IS NULL
                    AND NEW.raw_body = ''::bytea
                    AND NEW.body_redacted_at IS NOT NULL))
       OR (NEW.body_redacted_at IS DISTINCT FROM OLD.body_redacted_at
           AND OLD.body_redacted_at IS NOT NULL)
    THEN
        RAISE EXCEPTION 'webhook event % is evidence: its content is '
                        'immutable (its body may only be redacted, once)',
                        OLD.id
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;

-- a conflicting body: append-only, but for its redaction
CREATE FUNCTION mt5credit.webhook_event_conflict_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'DELETE'
       OR (NEW.id, NEW.event_id, NEW.body_sha256, NEW.signature_scheme,
           NEW.signed_at, NEW.received_at)
          IS DISTINCT FROM
          (OLD.id, OLD.event_id, OLD.body_sha256, OLD.signature_scheme,
           OLD.signed_at, OLD.received_at)
       OR OLD.body_redacted_at IS NOT NULL
       OR NEW.raw_body <> ''::bytea OR NEW.body_redacted_at IS NULL
    THEN
        RAISE EXCEPTION 'a conflicting webhook body is evidence: it is never '
                        'changed, only redacted once'
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;

DROP TRIGGER webhook_event_conflict_append_only
    ON mt5credit.webhook_event_conflict;

CREATE TRIGGER webhook_event_conflict_guard
    BEFORE UPDATE OR DELETE ON mt5credit.webhook_event_conflict
    FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_event_conflict_guard();


CREATE FUNCTION mt5credit.retention_redact(p_days integer)
RETURNS TABLE (redacted bigint, held_by_cases bigint, conflicts bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_before  timestamptz;
BEGIN
    IF p_days IS NULL OR p_days < 90 OR p_days > 3650 THEN
        RAISE EXCEPTION 'retention: bodies are kept 90 to 3650 days, not %',
                        coalesce(p_days::text, 'none')
            USING ERRCODE = 'MC150',
                  HINT = 'reconciliation looks back 62 days and replays '
                         'settled events';
    END IF;

    v_before := clock_timestamp() - make_interval(days => p_days);

    CREATE TEMP TABLE retention_old ON COMMIT DROP AS
    SELECT e.id,
           EXISTS (SELECT 1 FROM "case" k
                   WHERE k.status <> 'resolved'
                     AND (k.webhook_event_id = e.id
                          OR (e.credit_id IS NOT NULL
                              AND k.credit_id = e.credit_id))) AS held
    FROM webhook_event e
    LEFT JOIN mt5_credit c ON c.id = e.credit_id
    WHERE e.received_at < v_before
      AND e.body_redacted_at IS NULL
      AND (c.id IS NULL OR c.status IN ('done', 'failed'));

    UPDATE webhook_event e
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE e.id = o.id AND NOT o.held;
    GET DIAGNOSTICS redacted = ROW_COUNT;

    UPDATE webhook_event_conflict x
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    FROM retention_old o
    WHERE x.event_id = o.id AND NOT o.held AND x.body_redacted_at IS NULL;
    GET DIAGNOSTICS conflicts = ROW_COUNT;

    SELECT count(*) INTO held_by_cases FROM retention_old WHERE held;

    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION mt5credit.retention_redact(integer) IS
    'Empties the bodies of events older than p_days (90..3650) that no '
    'open case and no unfinished credit needs; their digests stay (070)';

REVOKE ALL ON FUNCTION mt5credit.retention_redact(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mt5credit.webhook_event_conflict_guard() FROM PUBLIC;

RESET ROLE;

GRANT EXECUTE ON FUNCTION mt5credit.retention_redact(integer)
    TO mt5credit_retention;
