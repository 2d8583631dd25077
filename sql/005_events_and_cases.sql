--
-- 005: provider webhook events, and cases for a person.
--
-- Every signed event is stored exactly as it arrived (the raw bytes, not a
-- re-serialization) under its provider's event id.  A second delivery of
-- the same id is a duplicate and changes nothing.  The same id with other
-- bytes is never an overwrite: the second body is kept beside the first
-- and a person is told.
--
-- A case is anything the system will not decide alone: a payment it
-- cannot place, an amount that disagrees, an MT5 answer it cannot trust.

CREATE TABLE mt5credit.webhook_event (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider           text        NOT NULL
                       CHECK (provider ~ '^[a-z][a-z0-9_-]{0,31}$'),
    provider_event_id  text        NOT NULL
                       CHECK (length(provider_event_id) BETWEEN 1 AND 255),
    event_type         text        CHECK (length(event_type) BETWEEN 1 AND 255),
    raw_body           bytea       NOT NULL,
    body_sha256        bytea       NOT NULL
                       CHECK (length(body_sha256) = 32),
    signature_scheme   text        NOT NULL
                       CHECK (signature_scheme IN ('stripe', 'standard',
                                                   'hmac-sha256')),
    -- the signature's own timestamp, when the scheme has one
    signed_at          timestamptz,
    received_at        timestamptz NOT NULL DEFAULT now(),

    -- what ingest() did with it, decided in the same transaction
    disposition        text        NOT NULL
                       CHECK (disposition IN ('credit_created',
                                              'already_credited',
                                              'ignored', 'case_opened')),
    credit_id          bigint      REFERENCES mt5credit.mt5_credit (id),
    detail             text,

    UNIQUE (provider, provider_event_id),
    CHECK (disposition NOT IN ('credit_created', 'already_credited')
           OR credit_id IS NOT NULL)
);

COMMENT ON TABLE mt5credit.webhook_event IS
    'Signed provider events, raw bytes as received, unique per provider '
    'event id; append-only.';

CREATE INDEX webhook_event_received_idx
    ON mt5credit.webhook_event (received_at);


-- a body that arrived under an event id already stored with other bytes
CREATE TABLE mt5credit.webhook_event_conflict (
    id                 bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id           bigint      NOT NULL
                       REFERENCES mt5credit.webhook_event (id),
    raw_body           bytea       NOT NULL,
    body_sha256        bytea       NOT NULL
                       CHECK (length(body_sha256) = 32),
    signature_scheme   text        NOT NULL,
    signed_at          timestamptz,
    received_at        timestamptz NOT NULL DEFAULT now(),

    -- the same conflicting body twice is one conflict
    UNIQUE (event_id, body_sha256)
);


CREATE TABLE mt5credit.case (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind              text        NOT NULL
                      CHECK (kind ~ '^[a-z][a-z0-9_]{2,63}$'),
    severity          text        NOT NULL
                      CHECK (severity IN ('low', 'medium', 'high',
                                          'critical')),
    status            text        NOT NULL DEFAULT 'open'
                      CHECK (status IN ('open', 'assigned',
                                        'pending_resolution', 'resolved')),

    -- what it is about; any may be NULL, details say the rest
    credit_id         bigint      REFERENCES mt5credit.mt5_credit (id),
    deposit_id        bigint      REFERENCES mt5credit.deposit (id),
    webhook_event_id  bigint      REFERENCES mt5credit.webhook_event (id),
    details           jsonb       NOT NULL DEFAULT '{}'
                      CHECK (jsonb_typeof(details) = 'object'),

    -- the same finding reported twice updates one case
    dedupe_key        text        NOT NULL UNIQUE,

    opened_at         timestamptz NOT NULL DEFAULT now(),
    opened_by         text        NOT NULL,
    assigned_to       text,
    resolved_by       text,
    resolved_at       timestamptz,
    resolution        text,

    CHECK (status <> 'assigned' OR assigned_to IS NOT NULL),
    CHECK ((status = 'resolved')
           = (resolved_by IS NOT NULL AND resolved_at IS NOT NULL
              AND resolution IS NOT NULL))
);

COMMENT ON TABLE mt5credit.case IS
    'Work for a person: what was found, about which rows, and how it '
    'ended. Nothing here moves money by itself.';

CREATE INDEX case_open_idx ON mt5credit.case (status, kind)
    WHERE status <> 'resolved';


--
-- open_case(): one case per dedupe key.  Reporting the same finding again
-- while it is open merges the new details in (and counts the sightings);
-- after it was resolved, a new sighting reopens nothing but is recorded in
-- the details, so a person sees it happened again.
--
CREATE FUNCTION mt5credit.open_case(p_kind text, p_severity text,
    p_dedupe_key text, p_details jsonb, p_credit_id bigint DEFAULT NULL,
    p_deposit_id bigint DEFAULT NULL, p_webhook_event_id bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_id  bigint;
BEGIN
    INSERT INTO "case" (kind, severity, dedupe_key, details, credit_id,
                        deposit_id, webhook_event_id, opened_by)
    VALUES (p_kind, p_severity, p_dedupe_key,
            p_details || jsonb_build_object('sightings', 1),
            p_credit_id, p_deposit_id, p_webhook_event_id, credit_actor())
    ON CONFLICT (dedupe_key) DO UPDATE
        SET details = "case".details || EXCLUDED.details
                      || jsonb_build_object('sightings',
                             coalesce(("case".details->>'sightings')::int, 1)
                             + 1)
    RETURNING id INTO v_id;

    RETURN v_id;
END
$$;

-- events and conflicts are evidence: an event's bytes never change, only
-- what ingest() decided about it (in the transaction that stored it)
CREATE FUNCTION mt5credit.webhook_event_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.provider_event_id, NEW.event_type, NEW.raw_body,
        NEW.body_sha256, NEW.signature_scheme, NEW.signed_at, NEW.received_at)
       IS DISTINCT FROM
       (OLD.provider, OLD.provider_event_id, OLD.event_type, OLD.raw_body,
        OLD.body_sha256, OLD.signature_scheme, OLD.signed_at, OLD.received_at)
    THEN
        RAISE EXCEPTION 'webhook event % is evidence: its content is '
                        'immutable', OLD.id
            USING ERRCODE = 'MC013';
    END IF;

    RETURN NEW;
END
$$;

CREATE TRIGGER webhook_event_immutable
    BEFORE UPDATE ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.webhook_event_guard();

CREATE TRIGGER webhook_event_append_only
    BEFORE DELETE ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER webhook_event_conflict_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.webhook_event_conflict
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();

CREATE TRIGGER case_no_delete
    BEFORE DELETE ON mt5credit.case
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();
