--
-- 073: a timeline the database has not recorded is handled as a rewind.
--
-- A worker saw a database go back in time only through a claim it had
-- lost: a claim kept on a host that the database no longer holds
-- (mc_rewind.c), or a deal MT5 has for a credit still pending
-- (mc_witness.c).  A restore, or an asynchronous failover, after which no
-- such claim was lost still loses what the edge acknowledged after the
-- last change the database kept: measured in t/92, two payments
-- acknowledged while no worker claimed, restored away, and nothing but
-- the log line "database timeline 2 -> 3" (t/83 measured the same
-- under an asynchronous failover: webhooks answered 200 missing on the
-- new primary, no claim lost, no case).  The providers had their 200 and
-- never send them again.
--
-- A restore and a failover both end on a new timeline, and a database
-- that went back in time has also forgotten the timelines after the one
-- it went back to.  So the database now records each timeline it runs
-- on, in itself: one it is on and has no row for is one it came to by a
-- failover or a restore, which may have lost something.  Any worker, on
-- any host, notices it on its next connection, and one (the row's
-- INSERT decides which) starts what a rewind starts (069): pending
-- credits looked up in MT5 before any call, every event since an hour
-- before the last change kept asked again from the providers that list
-- theirs, the others named in a case.  A switchover to a synchronous
-- standby lost nothing, and nothing here can tell it from an
-- asynchronous one: what it costs is one lookup per pending credit and
-- one events list per provider, and a case of its own
-- (database_timeline_changed, high), which a person resolves as a
-- false_positive once the promotion is known to have been lossless.
--
-- A rewind a claim proved (database_rewound(), critical) records the
-- timeline too, so one rewind is never handled twice.  The timeline is
-- the one WAL is written on (pg_walfile_name(pg_current_wal_lsn())): a
-- promoted primary writes its new timeline at once, where its control
-- file's checkpoint says so only after its next checkpoint.  A cluster
-- made again from a dump has another system identifier, and is
-- unrecorded too.
--
-- Re-declared, this file holds their current definitions:
--   database_rewound()   (069's, by rewind_begin())
--   rewind_recover()     (069's, with the severity of its cases)
--

CREATE TABLE mt5credit.database_timeline (
    system_identifier  text        NOT NULL
                                   CHECK (system_identifier ~ '^[0-9]{1,20}$'),
    timeline           integer     NOT NULL CHECK (timeline > 0),
    recorded_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    recorded_by        text        NOT NULL
                                   CHECK (length(recorded_by) BETWEEN 1 AND 200),
    -- the rewind that handled its arrival: the one it started, or the
    -- proved rewind that recorded it; none for the first one recorded
    rewind_id          bigint      REFERENCES mt5credit.database_rewind (id),
    PRIMARY KEY (system_identifier, timeline)
);

COMMENT ON TABLE mt5credit.database_timeline IS
    'Each (system identifier, timeline) the database has run on, recorded '
    'by the first worker to see it: one it runs on and lacks is a '
    'failover or a restore (073); append-only';

CREATE TRIGGER database_timeline_append_only
    BEFORE UPDATE OR DELETE ON mt5credit.database_timeline
    FOR EACH ROW EXECUTE FUNCTION mt5credit.refuse_change();


-- the cluster and the timeline its WAL is written on now
CREATE FUNCTION mt5credit.database_timeline_now(OUT system_identifier text,
    OUT timeline integer)
LANGUAGE sql STABLE
SET search_path = mt5credit, pg_temp
AS $$
    SELECT (SELECT s.system_identifier::text FROM pg_control_system() s),
           ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))
               ::bit(32)::integer
$$;

REVOKE ALL ON FUNCTION mt5credit.database_timeline_now() FROM PUBLIC;


-- 069's: its cases take the severity of the rewind that asks
DROP FUNCTION mt5credit.rewind_recover(bigint, timestamptz, text);

CREATE FUNCTION mt5credit.rewind_recover(p_rewind bigint,
    p_lost_from timestamptz, p_worker text, p_severity text)
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
        PERFORM open_case('events_lost_in_rewind', p_severity,
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

REVOKE ALL ON FUNCTION mt5credit.rewind_recover(bigint, timestamptz, text,
    text) FROM PUBLIC;


-- What a rewind starts, proved or possible: pending credits looked up
-- first, numbers never given again, lost events asked for, a case of
-- p_kind.  Returns the rewind and how many credits are looked up.
CREATE FUNCTION mt5credit.rewind_begin(p_worker text,
    p_lease_seconds integer, p_detail jsonb, p_kind text, p_severity text,
    OUT rewind_id bigint, OUT credits integer)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_credit     bigint;
    v_wd         bigint;
    v_lost_from  timestamptz;
    v_asked      integer;
BEGIN
    PERFORM set_actor(p_worker, coalesce(p_detail, '{}')
                                || jsonb_build_object('step', p_kind));

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
    GET DIAGNOSTICS credits = ROW_COUNT;

    -- 037: which withdrawals the lost timeline may have debited
    INSERT INTO database_rewind (noticed_by, withdrawals_upto, detail,
                                 lost_from)
    VALUES (p_worker, coalesce((SELECT max(id) FROM withdrawal), 0),
            coalesce(p_detail, '{}'), v_lost_from)
    RETURNING id INTO rewind_id;

    -- 037: numbers the lost timeline gave out are never given again
    -- (corrections and withdrawals are still numbered)
    v_credit := setval(pg_get_serial_sequence('mt5credit.mt5_credit', 'id'),
                       greatest((SELECT max(id) FROM mt5_credit), 0)
                       + 1000000);
    v_wd := setval(pg_get_serial_sequence('mt5credit.withdrawal', 'id'),
                   greatest((SELECT max(id) FROM withdrawal), 0) + 1000000);

    -- 069: the events it acknowledged in the lost timeline, asked for
    v_asked := rewind_recover(rewind_id, v_lost_from, p_worker, p_severity);

    PERFORM open_case(p_kind, p_severity,
                      p_kind || ':' || rewind_id,
                      coalesce(p_detail, '{}')
                      || jsonb_build_object('worker', p_worker,
                                            'rewind', rewind_id,
                                            'credits_to_look_up', credits,
                                            'lost_from', v_lost_from,
                                            'backfills_asked', v_asked,
                                            'next_credit_from', v_credit + 1,
                                            'next_withdrawal_from', v_wd + 1,
                                            'seen_at', clock_timestamp()));
END
$$;

REVOKE ALL ON FUNCTION mt5credit.rewind_begin(text, integer, jsonb, text,
    text) FROM PUBLIC;


-- A worker's kept claim, or MT5, proved a rewind: the pending credits
-- it returns are looked up before any call.  The timeline it happened
-- on is recorded, so it is not handled again as an unrecorded one.
CREATE OR REPLACE FUNCTION mt5credit.database_rewound(p_worker text,
    p_lease_seconds integer, p_detail jsonb)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    r  record;
BEGIN
    SELECT * INTO r FROM rewind_begin(p_worker, p_lease_seconds, p_detail,
                                      'database_rewound', 'critical');

    INSERT INTO database_timeline (system_identifier, timeline, recorded_by,
                                   rewind_id)
    SELECT t.system_identifier, t.timeline, p_worker, r.rewind_id
    FROM database_timeline_now() t
    ON CONFLICT DO NOTHING;

    RETURN r.credits;
END
$$;


-- A worker's first question on each connection: is this a timeline the
-- database has recorded?  If not, it is recorded, with the rewind's
-- handling it started (database_timeline_changed).  known_timeline is
-- the newest recorded before (NULL: none, the first is only recorded);
-- rewind_id is NULL unless this call started one.  The table's lock
-- makes one worker of several that see it at once the one that handles
-- it: the others wait, then find it recorded.
CREATE FUNCTION mt5credit.timeline_check(p_worker text,
    p_lease_seconds integer,
    OUT system_identifier text, OUT timeline integer,
    OUT known_timeline integer, OUT rewind_id bigint, OUT credits integer)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
BEGIN
    credits := 0;

    SELECT t.system_identifier, t.timeline INTO system_identifier, timeline
    FROM database_timeline_now() t;

    IF EXISTS (SELECT 1 FROM database_timeline d
               WHERE d.system_identifier = timeline_check.system_identifier
                 AND d.timeline = timeline_check.timeline)
    THEN
        known_timeline := timeline;
        RETURN;
    END IF;

    LOCK TABLE database_timeline IN SHARE ROW EXCLUSIVE MODE;

    -- the newest recorded, of any system identifier: another cluster is
    -- as unrecorded as another timeline
    SELECT d.timeline INTO known_timeline
    FROM database_timeline d
    ORDER BY d.recorded_at DESC, d.timeline DESC LIMIT 1;

    IF EXISTS (SELECT 1 FROM database_timeline d
               WHERE d.system_identifier = timeline_check.system_identifier
                 AND d.timeline = timeline_check.timeline)
    THEN
        RETURN;
    END IF;

    IF known_timeline IS NOT NULL THEN
        SELECT b.rewind_id, b.credits INTO rewind_id, credits
        FROM rewind_begin(p_worker, p_lease_seconds,
                 jsonb_build_object(
                     'system_identifier', system_identifier,
                     'timeline', timeline,
                     'known_timeline', known_timeline,
                     'do', 'the database is on a timeline it had not '
                           'recorded: a failover or a restore.  Pending '
                           'credits are looked up in MT5 before any call, '
                           'and the events since an hour before lost_from '
                           'are read again from the providers that list '
                           'them.  After a restore, or a failover to an '
                           'asynchronous standby, follow "After a restore" '
                           'in docs/operations.md; if the promoted standby '
                           'was synchronous nothing was lost: resolve as '
                           'false_positive'),
                 'database_timeline_changed', 'high') b;
    END IF;

    INSERT INTO database_timeline (system_identifier, timeline, recorded_by,
                                   rewind_id)
    VALUES (system_identifier, timeline, p_worker, rewind_id);
END
$$;

COMMENT ON FUNCTION mt5credit.timeline_check(text, integer) IS
    'Records the timeline the database runs on; an unrecorded one (a '
    'failover, a restore) starts a rewind''s handling (073)';

GRANT EXECUTE ON FUNCTION mt5credit.timeline_check(text, integer)
    TO mt5credit_worker;

-- the timeline this migration runs on is the first recorded: nothing
-- before it is known, so nothing is handled
INSERT INTO mt5credit.database_timeline (system_identifier, timeline,
                                         recorded_by)
SELECT t.system_identifier, t.timeline, 'migration 073'
FROM mt5credit.database_timeline_now() t;
