--
-- 074: a malformed delivery's body is not kept for ever either.
--
-- 070 redacts an old event's body, and left webhook_malformed alone: a
-- signed body that is not an event (045) kept its bytes for ever, with
-- the same personal data an event carries.  It is no money: no credit,
-- no case and no reconciliation reads it (its reason and its count of
-- deliveries are what a person reads).  So retention_redact(days) now
-- empties the body of one last delivered more than `days` ago, once; its
-- digest stays, and so do its reason, its first and last delivery and
-- their count.  Delivered again afterwards, the same bytes are counted
-- on the row under their digest, as before, and not stored again.
--
-- Replays (039's webhook_event_replay) carry no body: who replayed which
-- stored event, when, why, and what came of it.  They are the desk's
-- history and stay, as every other history does.
--
-- Re-declared, this file holds their current definitions:
--   webhook_malformed_guard()   (051's, allowing the redaction)
--   retention_redact()          (070's, with the malformed deliveries)
--

ALTER TABLE mt5credit.webhook_malformed
    ADD COLUMN body_redacted_at timestamptz,
    ADD CONSTRAINT webhook_malformed_redacted_empty
        CHECK (body_redacted_at IS NULL OR raw_body = ''::bytea),
    DROP CONSTRAINT webhook_malformed_check,
    ADD CONSTRAINT webhook_malformed_body_digest
        CHECK (body_redacted_at IS NOT NULL OR body_sha256 = sha256(raw_body));

COMMENT ON COLUMN mt5credit.webhook_malformed.body_redacted_at IS
    'When its body was removed under the retention policy (074); its '
    'digest stays';


-- 051's guard: the first delivery stays as it came, but for its body's
-- one redaction; the latest delivery moves on
CREATE OR REPLACE FUNCTION mt5credit.webhook_malformed_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.body_sha256, NEW.signature_scheme, NEW.reason,
        NEW.first_received_at, NEW.first_request_id)
       IS DISTINCT FROM
       (OLD.provider, OLD.body_sha256, OLD.signature_scheme, OLD.reason,
        OLD.first_received_at, OLD.first_request_id)
       OR NEW.deliveries < OLD.deliveries
       OR (NEW.raw_body IS DISTINCT FROM OLD.raw_body
           AND NOT (OLD.body_redacted_at IS NULL
                    AND NEW.raw_body = ''::bytea
                    AND NEW.body_redacted_at IS NOT NULL))
       OR (NEW.body_redacted_at IS DISTINCT FROM OLD.body_redacted_at
           AND OLD.body_redacted_at IS NOT NULL)
    THEN
        RAISE EXCEPTION 'a malformed delivery is kept as it came (its body '
                        'may only be redacted, once)'
            USING ERRCODE = 'MC014';
    END IF;
    RETURN NEW;
END
$$;


-- its result gains a column: made again, with its grant
DROP FUNCTION mt5credit.retention_redact(integer);

CREATE FUNCTION mt5credit.retention_redact(p_days integer)
RETURNS TABLE (redacted bigint, held_by_cases bigint, conflicts bigint,
               malformed bigint)
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

    -- 074: by its latest delivery, which a provider may still repeat
    UPDATE webhook_malformed m
    SET raw_body = ''::bytea, body_redacted_at = clock_timestamp()
    WHERE m.last_received_at < v_before AND m.body_redacted_at IS NULL;
    GET DIAGNOSTICS malformed = ROW_COUNT;

    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION mt5credit.retention_redact(integer) IS
    'Empties the bodies of events older than p_days (90..3650) that no '
    'open case and no unfinished credit needs, and of malformed deliveries '
    'last delivered before then; their digests stay (070, 074)';

REVOKE ALL ON FUNCTION mt5credit.retention_redact(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.retention_redact(integer)
    TO mt5credit_retention;
