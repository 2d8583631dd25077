#!/usr/bin/perl
#
# Faults with real servers.  Impossible:
#   - PostgreSQL down making a delivery look accepted: it gets 503 with
#     Retry-After, and the redelivery after the restart is stored; the
#     outage written as a log line per request
#   - a slow statement (a lock held by the test) blocking the worker:
#     another location and another webhook are answered meanwhile
#   - a statement past the query timeout answered as success: 503, and
#     the redelivery stores the event exactly once
#   - a client that disconnects mid-statement losing the event or
#     leaking the connection
#   - a burst beyond pool + queue waiting forever: refused at once (503);
#     a request waiting in the queue past its timeout: 503, not a hang
#   - idle connections kept forever: closed after the idle timeout and
#     reopened on demand; a connection kept at the size of an outsize body
#   - Redis down, or hung, failing or delaying a delivery; a wake-up lost
#     for good after Redis returns; a lost wake-up counted twice, or an
#     outage logged once per request
#   - a reload or a graceful stop leaving alerts or open sockets; a stop
#     abandoning the webhooks running or queued when it began, or their
#     wake-ups

use strict;
use warnings;

use IO::Select;
use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

my $secret = 'whsec_faults';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
$sb->start_redis;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");

my $http = <<"HTTP";
    mt5_credit_postgres "%%PG%%";
    mt5_credit_postgres_pool_size 2;
    mt5_credit_postgres_queue 2;
    mt5_credit_postgres_query_timeout 5s;
    mt5_credit_postgres_queue_timeout 2s;
    mt5_credit_postgres_idle_timeout 3s;
    mt5_credit_retry_after 7;
    mt5_credit_redis %%REDIS%%;
    mt5_credit_redis_timeout 1s;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
        location = /plain { return 200 "plain\\n"; }
        location = /status { mt5_credit_status; }
    }
HTTP
$sb->start_nginx($http);

$sb->register_account('erin', 5001);

my $k = 0;
sub new_deposit {
    return $sb->create_deposit(client => 'erin', login => 5001,
                               amount => 1000);
}

sub event { stripe_event(deposit => new_deposit(), amount => 1000, @_) }

sub post {
    my ($body) = @_;
    return $sb->http('POST', '/webhooks/stripe', body => $body,
                     headers => stripe_headers($secret, $body));
}

sub post_start {
    my ($body) = @_;
    return $sb->http_start('POST', '/webhooks/stripe', body => $body,
                           headers => stripe_headers($secret, $body));
}

sub answered { IO::Select->new($_[0])->can_read($_[1] // 0) ? 1 : 0 }

sub wait_until {
    my ($what, $cond, $timeout) = @_;
    my $until = time + ($timeout || 20);
    while (time < $until) {
        return 1 if $cond->();
        sleep 0.1;
    }
    diag("timed out waiting for $what");
    return 0;
}

# Holds the unique key (stripe, $id) in an open transaction, so ingest()
# for that event waits on the lock.
sub hold_event_key {
    my ($id) = @_;
    my $s = $sb->psql_session;
    $s->send("BEGIN; INSERT INTO mt5credit.webhook_event (provider, "
             . "provider_event_id, raw_body, body_sha256, signature_scheme, "
             . "disposition) VALUES ('stripe', '$id', '\\x00', "
             . "sha256('\\x00'), 'stripe', 'ignored');");
    wait_until('the lock', sub {
        $sb->sql1("SELECT count(*) FROM pg_stat_activity WHERE state = "
                  . "'idle in transaction'") >= 1 });
    return $s;
}

sub waiting_on_locks {
    return $sb->sql1('SELECT count(*) FROM pg_locks WHERE NOT granted');
}

sub credit_of { $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                          . "WHERE provider_payment_id = '$_[0]'") }

# --- PostgreSQL down, then back ----------------------------------------------

{
    my $ev = event(pi => 'pi_pgdown', id => 'evt_pgdown');
    is(post($ev)->{status}, 200, 'delivered while PostgreSQL is up');

    my $down = event(pi => 'pi_pgdown2', id => 'evt_pgdown2');
    my $connects = $sb->status_value('mt5credit_pg_connects_total');
    $sb->stop_postgres('fast');
    my $res = post($down);
    is($res->{status}, 503, 'PostgreSQL stopped: 503');
    is($res->{headers}{'retry-after'}, 7, 'with Retry-After');
    is(post($down)->{status}, 503, 'and again (no worker restart, no hang)');
    sleep 1;
    ok($sb->status_value('mt5credit_pg_connects_total') - $connects <= 4,
       'a refused connect does not start another: no reconnect storm');
    my $from = $sb->error_log_size;
    my @six = map { post($down)->{status} } 1 .. 6;
    is("@six", '503 503 503 503 503 503', 'six more in a burst: 503 each');
    my $lines = () = $sb->error_log($from) =~ /PostgreSQL unavailable:/g;
    ok($lines >= 1 && $lines <= 2, "... written as $lines log line(s), "
       . 'not six (one a second, with the count)');

    $sb->start_postgres;
    my $again;
    wait_until('PostgreSQL back', sub {
        $again = post($down);
        $again->{status} != 503 });
    is($again->{status}, 200, 'after the restart the redelivery is accepted');
    is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event "
                 . "WHERE provider_event_id = 'evt_pgdown2'"), 1,
       'and stored once');
    ok($sb->status_value('mt5credit_responses_total{provider="stripe",code="503"}') >= 2,
       'the 503s were counted');
}

# --- a slow statement does not block the worker ------------------------------

{
    my $ev = event(pi => 'pi_slow', id => 'evt_slow');
    my $lock = hold_event_key('evt_slow');
    my $pending = post_start($ev);
    wait_until('ingest to wait on the lock', sub { waiting_on_locks() >= 1 });

    my $plain = $sb->http('GET', '/plain', timeout => 10);
    is($plain->{status}, 200, 'while a statement waits, another location answers');
    my $other = post(event(pi => 'pi_fast', id => 'evt_fast'));
    like($other->{body}, qr/credit_created/,
         'and another webhook is stored on the second connection');
    ok(!answered($pending), 'the waiting webhook has not been answered yet');

    $lock->send('ROLLBACK;');
    my $res = Mt5Credit::Sandbox::http_end($pending);
    is($res->{status}, 200, 'once the lock goes, the waiting webhook gets 200');
    like($res->{body}, qr/credit_created/, 'and its credit');
    $lock->close;
}

# --- beyond pool and queue: refused at once ----------------------------------

{
    my @locks = map { hold_event_key("evt_q$_") } 1 .. 2;
    my @busy = map { post_start(event(pi => "pi_q$_", id => "evt_q$_")) } 1 .. 2;
    wait_until('both connections to block', sub { waiting_on_locks() >= 2 });
    my @queued = map { post_start(event(pi => "pi_q$_", id => "evt_q$_")) } 3 .. 4;
    wait_until('two to queue', sub { $sb->status_value('mt5credit_pg_queue') == 2 });

    my $res = post(event(pi => 'pi_q5', id => 'evt_q5'));
    is($res->{status}, 503, 'pool busy and queue full: 503 at once');
    ok(!answered($_), 'while the queued ones still wait') for @queued;

    $_->send('ROLLBACK;'), $_->close for @locks;
    for my $s (@busy, @queued) {
        like(Mt5Credit::Sandbox::http_end($s)->{body}, qr/credit_created/,
             'a blocked or queued webhook completes');
    }
    is($sb->status_value('mt5credit_pg_queue'), 0, 'the queue is empty again');
    is($sb->status_value('mt5credit_pg_connections_busy'), 0, 'no connection busy');
}

# --- waiting in the queue past its timeout ------------------------------------

{
    my @locks = map { hold_event_key("evt_qt$_") } 1 .. 2;
    my @busy = map { post_start(event(pi => "pi_qt$_", id => "evt_qt$_")) } 1 .. 2;
    wait_until('both connections to block', sub { waiting_on_locks() >= 2 });

    my $res = post(event(pi => 'pi_qt3', id => 'evt_qt3'));
    is($res->{status}, 503, 'queued past mt5_credit_postgres_queue_timeout: 503');
    ok(!answered($_), 'while the connections are still busy') for @busy;
    ok($sb->status_value('mt5credit_db_failures_total{provider="stripe",cause="queue_timeout"}') >= 1,
       'counted as a queue timeout');

    $_->send('ROLLBACK;'), $_->close for @locks;
    like(Mt5Credit::Sandbox::http_end($_)->{body}, qr/credit_created/,
         'the busy ones complete') for @busy;
    is(credit_of('pi_qt3'), 0, 'the refused one stored nothing');
}

# --- past the query timeout ----------------------------------------------------

{
    my $ev = event(pi => 'pi_timeout', id => 'evt_timeout');
    my $lock = hold_event_key('evt_timeout');
    my $t0 = time;
    my $res = post($ev);
    is($res->{status}, 503, 'a statement past the query timeout gets 503');
    is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                 . "WHERE provider_payment_id = 'pi_timeout'"), 0,
       'nothing committed behind its back');
    $lock->send('ROLLBACK;');
    $lock->close;

    # the first attempt was cancelled by the server's statement_timeout,
    # or (a lock released in the same instant) committed: either way the
    # redelivery finds exactly one
    my $again = post($ev);
    like($again->{body}, qr/"outcome":"(credit_created|duplicate)"/,
         'the redelivery is accepted');
    is(credit_of('pi_timeout'), 1, 'and the credit exists exactly once');
    ok($sb->status_value('mt5credit_db_failures_total{provider="stripe",cause="timeout"}') >= 1,
       'the timeout was counted');
}

# --- a client that goes away mid-statement -----------------------------------

{
    my $ev = event(pi => 'pi_abort', id => 'evt_abort');
    my $lock = hold_event_key('evt_abort');
    my $s = post_start($ev);
    wait_until('ingest to wait', sub { waiting_on_locks() >= 1 });
    close $s;
    sleep 0.3;
    $lock->send('ROLLBACK;');
    $lock->close;

    ok(wait_until('the event', sub { credit_of('pi_abort') == 1 }),
       'the event of a vanished client is still stored');
    ok(wait_until('the pool', sub {
           $sb->status_value('mt5credit_pg_connections_busy') == 0 }),
       'and its connection went back to the pool');
    is(post(event(pi => 'pi_after_abort'))->{status}, 200,
       'which keeps working');
}

# --- Redis -----------------------------------------------------------------

sub wake_list { $sb->redis_cli('LRANGE', 'mt5credit:wake', 0, -1) }

sub credit_id_of {
    $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
              . "WHERE provider_payment_id = '$_[0]'");
}

{
    post(event(pi => 'pi_r1'));
    my $id = credit_id_of('pi_r1');
    ok(wait_until('the wake-up', sub { wake_list() =~ /^$id$/m }),
       'a created credit is announced on the Redis list');

    $sb->stop_redis;
    my $errors = $sb->status_value('mt5credit_redis_errors_total');
    my $from = $sb->error_log_size;
    my $res = post(event(pi => 'pi_r2'));
    is($res->{status}, 200, 'Redis down: the delivery still gets 200');
    post(event(pi => "pi_r2_$_")) for 1 .. 5;
    my $lines = () = $sb->error_log($from)
                     =~ /wake-ups? since the last line wait/g;
    ok($lines >= 1 && $lines <= 2, "six missed wake-ups within a second "
       . "are $lines log line(s), not six");
    is($sb->sql1("SELECT status FROM mt5credit.mt5_credit "
                 . "WHERE provider_payment_id = 'pi_r2'"), 'pending',
       'and its credit waits, pending, for the poll');
    ok($sb->status_value('mt5credit_redis_errors_total') > $errors,
       'the missed wake-up is counted');

    $sb->start_redis;
    my $id3;
    ok(wait_until('wake-ups again', sub {
           my $pi = 'pi_r3_' . ++$k;
           post(event(pi => $pi));
           $id3 = credit_id_of($pi);
           wake_list() =~ /^$id3$/m }, 30),
       'after Redis returns, wake-ups flow again');
}

{
    # Redis alive but not answering (the process frozen): the answer must
    # not wait for it, and wake-ups resume once it thaws
    my $errors = $sb->status_value('mt5credit_redis_errors_total');
    kill 'STOP', $sb->{pids}{redis};
    my $res = post(event(pi => 'pi_hung'));
    is($res->{status}, 200, 'Redis hung: the delivery is still answered');
    ok(wait_until('the Redis deadline', sub {
           $sb->status_value('mt5credit_redis_errors_total') > $errors }, 10),
       '... its wake-up is lost at the deadline');
    sleep 0.5;
    is($sb->status_value('mt5credit_redis_errors_total') - $errors, 1,
       '... and counted once (its LTRIM, lost with it, is no wake-up)');
    kill 'CONT', $sb->{pids}{redis};

    my $id;
    ok(wait_until('wake-ups after the thaw', sub {
           my $pi = 'pi_thaw_' . ++$k;
           post(event(pi => $pi));
           $id = credit_id_of($pi);
           wake_list() =~ /^$id$/m }, 30),
       'after Redis thaws, wake-ups flow again');
}

# --- an outsize body: its connection is not kept at that size ----------------

{
    my $from = $sb->error_log_size;
    post(event(pi => 'pi_small_before'));
    (my $big = event(pi => 'pi_big')) =~ s/^\{/{"pad": "@{[ 'p' x 700_000 ]}",/;
    is(post($big)->{status}, 200, 'a signed 700 kB event is stored');
    post(event(pi => 'pi_small_after'));
    my @closed = $sb->error_log($from)
                 =~ /carried (\d+) bytes of parameters is closed/g;
    is(scalar(@closed), 1, '... and the one connection that carried it is '
       . 'closed after it (libpq would keep its buffer at that size)');
    ok(@closed && $closed[0] > 700_000, "... ($closed[0] bytes)");
    is(credit_of('pi_small_after'), 1, 'the next delivery is stored as ever');
}

# --- idle connections ---------------------------------------------------------

ok(wait_until('idle connections to close', sub {
       $sb->status_value('mt5credit_pg_connections') == 0 }, 15),
   'idle connections close after mt5_credit_postgres_idle_timeout');
is(post(event(pi => 'pi_after_idle'))->{status}, 200,
   'and a new delivery opens one again');

# --- reload and stop ---------------------------------------------------------

{
    my $from = $sb->error_log_size;
    $sb->reload_nginx;
    my $res;
    wait_until('the reloaded workers', sub {
        $res = post(event(pi => 'pi_reload_' . ++$k)); $res->{status} == 200 });
    is($res->{status}, 200, 'after a reload, deliveries are stored');
    is_deeply([ $sb->log_problems($from) ], [], 'the reload left no alerts');
}

# --- graceful stop with webhooks running and queued ---------------------------

{
    my @locks = map { hold_event_key("evt_exit$_") } 1 .. 2;
    my @busy = map { post_start(event(pi => "pi_exit$_", id => "evt_exit$_")) }
               1 .. 2;
    wait_until('both connections to block', sub { waiting_on_locks() >= 2 });
    my $queued = post_start(event(pi => 'pi_exit3', id => 'evt_exit3'));
    wait_until('one to queue', sub { $sb->status_value('mt5credit_pg_queue') == 1 });
    my $connects = $sb->status_value('mt5credit_pg_connects_total');

    kill 'QUIT', $sb->{pids}{nginx};
    sleep 0.5;
    $_->send('ROLLBACK;'), $_->close for @locks;

    for my $s (@busy, $queued) {
        like(Mt5Credit::Sandbox::http_end($s)->{body}, qr/credit_created/,
             'a webhook running or queued at QUIT still completes');
    }
    is($sb->stop_nginx, 0, 'and then nginx exits cleanly');
    is(credit_of('pi_exit3'), 1, 'the queued one was stored');
    my $list = wake_list();
    is(join(' ', grep { $list !~ /^$_$/m } map { credit_id_of("pi_exit$_") }
                 1 .. 3), '',
       '... and the wake-ups of all three reached Redis before the worker '
       . 'exited');
}

is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
is_deeply([ grep { /open socket/ } $sb->error_log ], [],
          'and no socket left open');

done_testing;
