#!/usr/bin/perl
#
# A live failover of PostgreSQL under webhook load (issue 30).  A
# streaming standby (pg_basebackup -R of the test primary, on loopback)
# streams through a relay that can stop carrying WAL (a path to the
# standby that fails first, as a partition does); the edge and two worker
# hosts (separate state_dirs, separate processes) are on a multi-host
# conninfo with target_session_attrs=read-write.  300 webhooks at 30/s;
# at the 120th the relay stops carrying WAL, a moment later the primary
# is crashed (pg_ctl stop -m immediate), the relay dropped with the WAL it
# held, and the standby promoted.  Webhooks not answered 200 are sent
# again afterwards, as the provider retries them; one answered 200 is
# never sent again.
#
# Reproduced on the old code (issue 30): with a synchronous standby, in
# 6 of 8 runs a worker logged "credit=N claimed, attempt 1", made the
# deal, and the new primary held that credit at attempt 0; with an
# asynchronous standby, 30 of 300 webhooks answered 200 were not on the
# new primary.
#
# Synchronous (synchronous_standby_names names the standby), impossible:
#   - a webhook answered 200 that the new primary lacks
#   - a balance call on a claim the new primary does not hold (the claim
#     whose COMMIT never returned is no claim: t/77)
#   - a payment with other than one deal, a credit not done
#   - a database_rewound case: nothing went back in time
#   - the new timeline unhandled: nothing in the database can tell it
#     from an asynchronous promotion, so it is handled as one (073), with
#     one database_timeline_changed case
#   - the edge or a worker not finding the promoted standby
#   - the money journal's period sealed before the failover not fitting on
#     the promoted standby, or a seal going on on the new timeline before
#     a person has verified (both modes)
# Asynchronous, impossible:
#   - a payment with two deals, whichever host made the deal and
#     whichever claims the new primary lost
#   - a credit of the new primary ending other than done, with one deal
#   - claims lost unseen: a database_rewound case, named by its witness
#     (a host's kept claims, or MT5)
#   - an acknowledged webhook the failover lost staying lost, claims lost
#     or not: the rewind (or the unrecorded timeline, 073) asks the
#     backfill for every event of its window, and its run brings
#     each back from the Stripe double's events list, looked up in MT5
#     before any call: one deal for each of the 300 payments at the end
# and measured: how many webhooks answered 200 the new primary lacked.

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use JSON::PP;
use POSIX ();
use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Worker;

my $N = 300;            # webhooks
my $RATE = 30;          # a second
my $CUT = 120;          # the relay stops carrying WAL after this many
my %WINDOW = (sync => 1, async => 2);   # seconds of WAL lost with it
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
my $json = JSON::PP->new->canonical;

# a payment's credit reference, as every timeline computes it (sql/066)
sub ref_of_pi { 'dep:' . substr(sha256_hex("stripe:$_[0]"), 0, 18) }

# whole lines only (a line is one write, but a reader may come between)
sub lines_in {
    my ($file) = @_;
    open my $fh, '<', $file or return;
    return grep { /\n\z/ } <$fh>;
}

sub answers { scalar(my @l = lines_in($_[0])) }

# (credit id, attempt) of every balance call a worker's log shows
sub calls_in_log {
    my ($log) = @_;
    my (%attempt, @calls);
    for (split /\n/, $log) {
        if (/credit=(\d+) ref=\S+ server=\S+ login=\d+: claimed, attempt (\d+)/) {
            $attempt{$1} = $2;
        } elsif (/credit=(\d+) ref=\S+ login=\d+: trade\/balance/) {
            push @calls, [ $1, $attempt{$1} // -1 ];
        }
    }
    return @calls;
}

sub drill {
    my ($mode, $base) = @_;
    my $sync = $mode eq 'sync';

    my ($p1, $p2, $relay) = map { Mt5Credit::Sandbox::free_port() } 1 .. 3;
    my $multi = sub {
        "host=127.0.0.1,127.0.0.1 port=$p1,$p2 dbname=mt5credit "
        . "user=$_[0] target_session_attrs=read-write"
    };
    my $st = Mt5Credit::Stack->new(sandbox => { pg_port => $p1 },
                                   postgres => $multi->('edge'));
    my $sb = $st->sb;
    my $sim = $st->sim;

    # ten accounts; the portal made every deposit well before its payment
    my @logins = map { $base + $_ } 1 .. 10;
    $st->account(login => $_) for @logins;
    my (@pi, @amount, @body);
    my $sql = '';
    for my $i (1 .. $N) {
        $amount[$i] = 1000 + $i;
        $sql .= "SELECT reference FROM mt5credit.create_deposit('alice', "
              . "'fo-$mode-$i', 'stripe', 'live1', $logins[$i % 10], "
              . "$amount[$i], 'USD');\n";
    }
    my @dep = (undef, map { $_->[0] } @{ $sb->psql($sql, user => 'portal') });
    my $sessions = '';
    for my $i (1 .. $N) {
        $pi[$i] = "pi_fo_${mode}_$i";
        $body[$i] = stripe_event(deposit => $dep[$i], amount => $amount[$i],
                                 currency => 'USD', pi => $pi[$i],
                                 id => "evt_fo_${mode}_$i");
        # the portal stored each Checkout Session on its deposit, as it
        # does: what vouches for a payment the backfill brings (sql/064)
        my $cs = $json->decode($body[$i])->{data}{object}{id};
        $sessions .= "SELECT mt5credit.deposit_set_session('alice', "
                   . "'$dep[$i]', '$cs');\n";
    }
    $sb->psql($sessions, user => 'portal');

    # the journal's witness (sql/081): a key and heads off the database
    my $wit = $sb->audit_witness('auditor');
    my $audit = sub {
        my ($action, @more) = @_;
        return Mt5Credit::Worker::run($sb, 'audit', $action,
            ($action eq 'seal' ? ('--key', "$wit/audit.key")
                               : ('--pubkey', "$wit/audit.pub")),
            '--heads', "$wit/heads", '--database', $multi->('auditor'),
            @more);
    };

    # the standby, streaming through the relay
    my $flag = $sb->dir . '/relay.blackhole';
    $sb->spawn('relay', 'perl', "$Mt5Credit::Sandbox::ROOT/t/blackhole-proxy.pl",
               $relay, '127.0.0.1', $p1, $flag);
    Mt5Credit::Sandbox::wait_port($relay, 'the relay');
    $sb->start_standby('standby1', port => $p2, via => $relay);
    $sb->synchronous_standby('standby1') if $sync;
    $sb->standby_caught_up('standby1');
    is($sb->sql1("SELECT sync_state FROM pg_stat_replication WHERE "
                 . "application_name = 'standby1'"), $mode,
       "$mode: the standby streams, $mode");

    # MT5 a little slower than the load: the hosts fall behind, so
    # credits stored before the cut are claimed during it
    $sim->fault(kind => 'latency', ms => 100, count => 0,
                endpoint => '/api/trade/balance');
    for my $h (qw(a b)) {
        $st->start_worker("host-$h", %fast,
                          state_dir => $sb->dir . "/host-$h",
                          database => '"' . $multi->('worker') . '"',
                          query_database => '"' . $multi->('query') . '"');
    }

    # the load: one process per webhook, started at 30/s
    my $results = $sb->dir . '/answers';
    my $send = sub {
        my ($i) = @_;
        my $r = eval {
            $sb->http('POST', '/webhooks/stripe', body => $body[$i],
                      headers => stripe_headers($Mt5Credit::Stack::SECRET,
                                                $body[$i]),
                      timeout => 40);
        } || { status => 0, body => '' };
        return $r->{status};
    };
    my $loader = fork // die "fork: $!";
    if (!$loader) {
        my $t0 = time;
        my @kids;
        for my $i (1 .. $N) {
            # the clock read once: read twice, it moved on between the
            # test and the sleep, and Time::HiRes died of a negative
            # time (CI of b816ebe: the loader stopped at 264 of 300)
            my $wait = $t0 + ($i - 1) / $RATE - time;
            sleep($wait) if $wait > 0;
            my $pid = fork;
            if (!defined $pid) { sleep 0.05; redo }
            if (!$pid) {
                my $status = $send->($i);
                open my $fh, '>>', $results or POSIX::_exit(1);
                syswrite $fh, sprintf("%d %d %.3f\n", $i, $status, time);
                POSIX::_exit(0);
            }
            push @kids, $pid;
        }
        waitpid($_, 0) for @kids;
        POSIX::_exit(0);
    }

    # mid-load: the WAL stops reaching the standby, then the primary dies
    Mt5Credit::Worker::wait_for(sub { answers($results) >= $CUT }, 60)
        or die "the load did not start";
    # the money journal sealed just before, the period on the standby too
    my ($arc, $aout) = $audit->('seal');
    is($arc, 0, "$mode: the journal sealed mid-load") or diag $aout;
    $sb->standby_caught_up('standby1');
    open my $fh, '>', $flag or die;
    close $fh;
    sleep $WINDOW{$mode};
    my $crash = time;
    $sb->stop_postgres('immediate');
    my $crashed_at = answers($results);
    $sb->reap('relay', 'KILL');     # what it held is lost with it
    sleep 1.5;                      # a call in flight ends (call_timeout)

    # what the standby holds when it is promoted, and what MT5 holds
    my $held = $sb->psql("SELECT reference, status, attempts FROM "
                         . "mt5credit.mt5_credit", port => $p2);
    my %held = map { $_->[0] => $_ } @$held;
    my %events_held = map { $_->[0] => 1 } @{ $sb->psql(
        "SELECT provider_event_id FROM mt5credit.webhook_event",
        port => $p2) };
    my %dealt_before;
    $dealt_before{ $_->{Comment} // '' }++ for @{ $sim->ledger->{deals} };
    my $promoted_at = time;     # no COMMIT on the standby before this
    $sb->promote_standby('standby1');
    my $outage = time - $crash;

    waitpid($loader, 0);
    my (%first, %when);
    for (lines_in($results)) {
        my ($i, $status, $at) = split;
        ($first{$i}, $when{$i}) = ($status, $at);
    }
    is(scalar(keys %first), $N, "$mode: every webhook answered");
    my @acked = grep { $first{$_} == 200 } 1 .. $N;
    my @unacked = grep { $first{$_} != 200 } 1 .. $N;

    # the provider retries what was not answered 200
    my %later;
    my $until = time + 60;
    for my $i (@unacked) {
        my $s;
        do { $s = $send->($i); sleep 0.2 if $s != 200 }
            while $s != 200 && time < $until;
        $later{$i} = $s;
    }
    is(scalar(grep { $later{$_} != 200 } @unacked), 0,
       "$mode: each webhook not answered 200 is, sent again: the edge "
       . 'reaches the promoted standby');

    ok(Mt5Credit::Worker::wait_for(sub {
           $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                     . "WHERE status <> 'done'") == 0 }, 120),
       "$mode: every credit the new primary holds ends done: both hosts' "
       . 'workers reach it')
        or diag explain $sb->psql("SELECT id, status, attempts FROM "
                                  . "mt5credit.mt5_credit WHERE status <> "
                                  . "'done'");

    # deals per payment, by its reference
    my %deals;
    $deals{ $_->{Comment} // '' }++ for @{ $sim->ledger->{deals} };
    my @refs = map { ref_of_pi($pi[$_]) } 1 .. $N;
    my %per = (0 => 0, 1 => 0, 2 => 0);
    $per{ ($deals{$_} // 0) > 2 ? 2 : $deals{$_} // 0 }++ for @refs;
    my %credits = map { $_->[0] => $_ } @{ $sb->psql(
        "SELECT reference, status, id FROM mt5credit.mt5_credit") };
    # answered 200 before the promotion began: committed on the old
    # primary; lost if the standby did not have it when promoted
    my @acked_before = grep { $when{$_} < $promoted_at } @acked;
    my @lost_acked = grep { !$events_held{"evt_fo_${mode}_$_"} }
                     @acked_before;
    my @lost_claims = grep { $dealt_before{$_}
                             && (!$held{$_} || $held{$_}[1] eq 'pending') }
                      @refs;
    my $cases = $sb->psql("SELECT details->>'worker', coalesce(details->>"
                          . "'witness', 'kept claims'), coalesce(details->>"
                          . "'claims_lost', '?'), details->>"
                          . "'credits_to_look_up' FROM mt5credit.case "
                          . "WHERE kind = 'database_rewound' ORDER BY id");
    my $changed = $sb->sql1("SELECT count(*) FROM mt5credit.case "
                            . "WHERE kind = 'database_timeline_changed'");
    my $rewinds = $sb->sql1("SELECT count(*) FROM mt5credit.database_rewind");
    my @calls = map { calls_in_log($st->worker_log("host-$_")) } qw(a b);
    my @phantom = grep {
        $sb->sql1("SELECT count(*) FROM mt5credit.credit_history WHERE "
                  . "credit_id = $_->[0] AND to_status = 'claimed' AND "
                  . "attempts = $_->[1]") == 0
    } @calls;

    my @told;
    my $tell = sub { push @told, $_[0]; note($_[0]) };
    $tell->("$mode: $N webhooks, the primary crashed after $crashed_at "
         . "answers; first answers: " . scalar(@acked) . " 200, "
         . scalar(@unacked) . ' not (sent again until 200)');
    $tell->("$mode: answered 200 before the promotion and not on the new "
         . "primary: " . scalar(@lost_acked) . " of " . scalar(@acked_before));
    $tell->("$mode: deals made before the promotion whose claim the new "
         . "primary lacked: " . scalar(@lost_claims));
    $tell->("$mode: payments with 0/1/2+ deals: $per{0}/$per{1}/$per{2}; "
         . "credits on the new primary: " . scalar(keys %credits));
    $tell->("$mode: balance calls " . scalar(@calls) . ", on a claim the new "
         . "primary lacks " . scalar(@phantom));
    my %refused = map {
        my $h = $_;
        ($h => scalar(() = $st->worker_log("host-$h")
                          =~ /ERROR database: connection to server/g))
    } qw(a b);
    $tell->(sprintf("$mode: no primary for %.1f s; connects refused: host A "
                 . "%d, host B %d", $outage, $refused{a}, $refused{b}));
    $tell->("$mode: database_timeline_changed cases: $changed");
    $tell->("$mode: database_rewound cases: " . scalar(@$cases)
         . join('', map { "; by $_->[0], witness $_->[1], claims lost "
                          . "$_->[2], looked up $_->[3]" } @$cases));

    is($per{2}, 0, "$mode: no payment with two deals");
    is(scalar(grep { ($deals{$_} // 0) != 1 } keys %credits), 0,
       "$mode: every credit the new primary holds has exactly one deal");
    my %is_ref = map { $_ => 1 } @refs;
    is(scalar(grep { !$is_ref{$_} } keys %credits), 0,
       "$mode: (each credit's reference is its payment's, as computed here)");

    if ($sync) {
        # (the cut came while the hosts claimed: a claim's row, then a
        # COMMIT that waited for the standby and never returned)
        ok((grep { $st->worker_log("host-$_")
                   =~ /after the statement's rows: not done/ } qw(a b)),
           'sync: the crash caught a claim whose COMMIT never returned');
        is(scalar(@lost_acked), 0,
           'sync: no webhook answered 200 is missing on the new primary');
        is(scalar(@phantom), 0,
           'sync: no balance call on a claim the new primary does not hold')
            or diag explain \@phantom;
        is($per{1}, $N, 'sync: each of the payments has exactly one deal');
        is(scalar(@$cases), 0, 'sync: no database_rewound case: nothing '
           . 'went back in time');
        is($changed, 1, 'sync: one database_timeline_changed case: a '
           . 'new timeline, which nothing in the database tells from an '
           . 'asynchronous promotion');
    } else {
        if (@lost_claims) {
            cmp_ok(scalar(@$cases), '>=', 1,
                   'async: claims the new primary lost ('
                   . scalar(@lost_claims) . '): a database_rewound case');
        } else {
            pass('async: (no claim was lost this run: no rewind to see)');
        }
        is(scalar(@$cases) + $changed, $rewinds,
           'async: each rewind handled has its case');
        cmp_ok($rewinds, '>=', 1, 'async: the new timeline is handled, '
               . 'claims lost or not: the webhooks it lost are asked for');

        # the Stripe double's list of events: every event sent, each
        # delivered (answered 200) at last
        my $key = 'rk_test_failover';
        my $port = Mt5Credit::Sandbox::free_port();
        $sb->write_file('stripe-state.json', '{}');
        $sb->spawn('stripesim', 'perl',
                   "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl",
                   $port, $sb->dir . '/stripe-state.json', $key);
        Mt5Credit::Sandbox::wait_port($port, 'stripesim');
        for my $i (1 .. $N) {
            $sb->http('POST', '/control/event', port => $port,
                      body => $json->encode({ body => $body[$i],
                                              delivered => 1 }),
                      headers => [ [ 'Content-Type', 'application/json' ] ]);
        }

        # the backfill's next run (its timer): the rewind asked it for
        # every event of the lost window (sql/069)
        my $conf = $st->worker_config('backfill', %fast,
            database => '"' . $multi->('worker') . '"',
            query_database => '"' . $multi->('query') . '"',
            provider_api_url => "http://127.0.0.1:$port",
            provider_api_key_file => $sb->write_file('stripe-api.key',
                                                     "$key\n"));
        is($sb->sql1("SELECT count(*) FROM mt5credit.backfill_request "
                     . "WHERE every_event AND provider = 'stripe'"),
           $rewinds, 'async: each rewind asked for every event of its window');
        my ($rc, $out) = Mt5Credit::Worker::run($sb, 'backfill', 'stripe',
                                                '-c', $conf, '--since', '1h');
        is($rc, 0, 'async: the backfill runs') or diag $out;
        $tell->("async: backfill: $out");
        ok(Mt5Credit::Worker::wait_for(sub {
               $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                         . "WHERE status <> 'done'") == 0 }, 120),
           'async: the credits it brings end done');
        %credits = map { $_->[0] => $_ } @{ $sb->psql(
            "SELECT reference, status, id FROM mt5credit.mt5_credit") };
        %deals = ();
        $deals{ $_->{Comment} // '' }++ for @{ $sim->ledger->{deals} };
        %per = (0 => 0, 1 => 0, 2 => 0);
        $per{ ($deals{$_} // 0) > 2 ? 2 : $deals{$_} // 0 }++ for @refs;
        is(scalar(grep { !$credits{ ref_of_pi($pi[$_]) } } @lost_acked),
           0, 'async: every acknowledged webhook the failover lost ('
           . scalar(@lost_acked) . ') is recovered from the Stripe '
           . "double's events list");
        is($per{2}, 0, 'async: still no payment with two deals');
        is($per{1}, $N, 'async: each of the payments has exactly one '
           . 'deal at the end')
            or diag(join("\n", @told, map {
                   my $c = $credits{ ref_of_pi($pi[$_]) };
                   sprintf('no deal: webhook %d (%s): first %s at %.3f '
                           . '(promoted %.3f), later %s, on the standby %s, '
                           . 'credit %s', $_, $pi[$_], $first{$_}, $when{$_},
                           $promoted_at, $later{$_} // '-',
                           $events_held{"evt_fo_${mode}_$_"} ? 'yes' : 'no',
                           $c ? "$c->[2] $c->[1]" : 'none')
               } grep { !$deals{ ref_of_pi($pi[$_]) } } 1 .. $N));
    }

    # a round without a database is tried again a second later, never at
    # once for each wake-up queued in Redis (on 2c8caf0: 137 and 131
    # failed connects in 1.1 s, each one a backend forked on the standby;
    # now one round a second, of about five statements each trying)
    cmp_ok($refused{$_}, '<=', 10 * ($outage + 1),
           "$mode: host \U$_\E's worker retried the database a round a "
           . 'second while there was no primary, not once per queued '
           . 'wake-up') for qw(a b);

    # the journal on the promoted standby: its period signed before the
    # failover still fits; a seal waits for a person to say so
    my ($arc2, $aout2) = $audit->('seal');
    is($arc2, 1, "$mode: after the failover, audit seal refuses to go on "
       . 'on the new timeline by itself') or diag $aout2;
    like($aout2, qr/timeline/, '... saying why');
    ($arc2, $aout2) = $audit->('verify');
    is($arc2, 0, "$mode: audit verify on the promoted standby: every chain, "
       . 'fact and the period sealed before the failover fit') or diag $aout2;
    ($arc2, $aout2) = $audit->('seal', '--new-timeline');
    is($arc2, 0, "$mode: sealed on the new timeline once a person has "
       . 'verified') or diag $aout2;
    ($arc2, $aout2) = $audit->('verify');
    is($arc2, 0, "$mode: ... and both periods verify") or diag $aout2;

    is_deeply([ $sb->log_problems ], [], "$mode: nginx logged no alert or "
              . 'crash');
    $st->stop_worker($_) for qw(host-a host-b);
    $sb->teardown;
}

drill('sync', 83000);
drill('async', 83100);

done_testing;
