--
-- 069: a rewind's lost webhooks are asked for again, by the project itself.
--
-- A database that went back in time (an asynchronous failover, a restore)
-- lost the events it had acknowledged after its last surviving change.
-- The provider got 200 for each and will not send them again: measured
-- under an asynchronous failover, 30 of 300 acknowledged webhooks were not
-- on the new primary, 24 of them paid and never credited.  047's backfill
-- reads only the events the provider could not deliver
-- (delivery_success=false), and these were delivered.
--
-- Now database_rewound() asks for them:
--   - for each provider whose list of events a program reads
--     (provider_api.lists_events), a backfill request over the lost window
--     (from an hour before the last change the database held: an event is
--     made before it is delivered) for every event, delivered or not
--     (backfill_request.every_event); the backfill program takes it at its
--     next run (its timer), fetches each event and ingests it as the edge
--     would.  A recovered payment's credit is made within a week of the
--     rewind, so it is looked up in MT5 first from the lost timeline's
--     start (066): a deal the lost timeline made is recorded, never made
--     twice;
--   - for each other provider seen in the last 30 days, a critical
--     events_lost_in_rewind case: its events of the window must be sent
--     again from its dashboard, or replayed, by a person.
--
-- A request of a rewind reads at most 30 days back (the provider keeps no
-- more); a longer loss says so in its reason and its case.
--
-- Re-declared, this file holds their current definitions:
--   database_rewound()         (066's, asking for the lost events)
--   backfill_request_guard()   (059's, every_event never changes)
--   backfill_requests_take()   (059's, returns every_event)
--

ALTER TABLE mt5credit.backfill_request
    ADD COLUMN every_event boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN mt5credit.backfill_request.every_event IS
    'every event of the window, delivered or not: a rewind lost events the '
    'provider had delivered (069); false: the undelivered ones (047)';


CREATE OR REPLACE FUNCTION mt5credit.backfill_request_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.provider, NEW.since, NEW.reason, NEW.requested_by,
        NEW.requested_at, NEW.every_event)
       IS DISTINCT FROM
       (OLD.provider, OLD.since, OLD.reason, OLD.requested_by,
        OLD.requested_at, OLD.every_event)
       OR OLD.finished_at IS NOT NULL
    THEN
        RAISE EXCEPTION 'backfill request %: what was asked, and a finished '
                        'request, never change', OLD.id
            USING ERRCODE = 'MC096';
    END IF;
    RETURN NEW;
END
$$;


-- its result gains a column: made again, with its grant
DROP FUNCTION mt5credit.backfill_requests_take(text);

CREATE FUNCTION mt5credit.backfill_requests_take(p_provider text)
RETURNS TABLE (id bigint, since timestamptz, every_event boolean)
LANGUAGE sql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    UPDATE backfill_request b
    SET taken_by = session_user, taken_at = clock_timestamp()
    WHERE b.provider = p_provider AND b.finished_at IS NULL
      AND (b.taken_at IS NULL
           OR b.taken_at < clock_timestamp() - interval '1 hour')
    RETURNING b.id, b.since, b.every_event
$$;

GRANT EXECUTE ON FUNCTION mt5credit.backfill_requests_take(text)
    TO mt5credit_query;


-- what a rewind lost, asked for again: a request per provider that lists
-- its events, a case per other provider; the requests made
CREATE FUNCTION mt5credit.rewind_recover(p_rewind bigint,
    p_lost_from timestamptz, p_worker text)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_since    timestamptz;
    v_oldest   timestamptz := clock_timestamp() - interval '30 days'
                              + interval '1 minute';
    v_clamped  boolean;
    v_n        integer := 0;
    p          record;
BEGIN
    v_since := p_lost_from - interval '1 hour';
    v_clamped := v_since < v_oldest;
    IF v_clamped THEN
        v_since := v_oldest;
    END IF;

    FOR p IN SELECT a.provider FROM provider_api a WHERE a.lists_events
             ORDER BY a.provider
    LOOP
        INSERT INTO backfill_request (provider, since, reason, requested_by,
                                      every_event)
        VALUES (p.provider, v_since,
                'the database went back in time (rewind ' || p_rewind
                || ', noticed by ' || p_worker || '): every event since '
                || v_since || ' is read again'
                || CASE WHEN v_clamped
                        THEN '; the loss began ' || p_lost_from
                             || ', further back than the provider keeps'
                        ELSE '' END,
                'database_rewound:' || p_worker, true);
        v_n := v_n + 1;
    END LOOP;

    FOR p IN SELECT x.provider
             FROM (SELECT d.provider FROM deposit d
                   WHERE d.created_at > clock_timestamp() - interval '30 days'
                   UNION
                   SELECT e.provider FROM webhook_event e
                   WHERE e.received_at > clock_timestamp() - interval '30 days'
                  ) x
             WHERE NOT EXISTS (SELECT 1 FROM provider_api a
                               WHERE a.provider = x.provider
                                 AND a.lists_events)
             ORDER BY x.provider
    LOOP
        PERFORM open_case('events_lost_in_rewind', 'critical',
                          'events_lost_in_rewind:' || p_rewind || ':'
                          || p.provider,
                          jsonb_build_object(
                              'provider', p.provider,
                              'rewind', p_rewind,
                              'lost_from', p_lost_from,
                              'do', 'have the provider send its events since '
                                    'lost_from again (its dashboard), or '
                                    'replay them: no program can list them'));
    END LOOP;

    RETURN v_n;
END
$$;

REVOKE ALL ON FUNCTION mt5credit.rewind_recover(bigint, timestamptz, text)
    FROM PUBLIC;


CREATE OR REPLACE FUNCTION mt5credit.database_rewound(p_worker text,
    p_lease_seconds integer, p_detail jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_n          integer;
    v_credit     bigint;
    v_wd         bigint;
    v_lost_from  timestamptz;
    v_rewind     bigint;
    v_asked      integer;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || '{"step": "database_rewound"}');

    -- 066: what the database still held ends here; its credits' history
    -- is every change to them
    v_lost_from := coalesce((SELECT h.at FROM credit_history h
                             ORDER BY h.id DESC LIMIT 1),
                            clock_timestamp());

    -- attempts + 1: the lost timeline may have claimed it (the attempt is
    -- the lease token, so no worker of that timeline can write it now);
    -- 066: looked up from the lost timeline's start
    UPDATE mt5_credit
    SET status = 'unknown',
        attempts = attempts + 1,
        lease_expires_at = clock_timestamp()
                           + make_interval(secs => p_lease_seconds),
        next_check_at = NULL,
        look_from = least(coalesce(look_from, v_lost_from), v_lost_from)
    WHERE status = 'pending';
    GET DIAGNOSTICS v_n = ROW_COUNT;

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail,
                                 lost_from)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'), v_lost_from)
    RETURNING id INTO v_rewind;

    -- 037: numbers the lost timeline gave out are never given again
    -- (corrections and withdrawals are still numbered)
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    -- 069: the events it acknowledged in the lost timeline, asked for
    v_asked := rewind_recover(v_rewind, v_lost_from, p_worker);

    PERFORM open_case('database_rewound', 'critical',
                      'database_rewound:' || md5(coalesce(p_detail, '{}')::text
                                                 || clock_timestamp()),
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'credits_to_look_up', v_n,
                                            'lost_from', v_lost_from,
                                            'backfills_asked', v_asked,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
    RETURN v_n;
END
$$;
