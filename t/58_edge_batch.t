#!/usr/bin/perl
#
# The edge's batches: webhooks waiting for a connection sent together in
# one statement (mt5_credit_postgres_batch, sql/062's ingest_batch()),
# through a live nginx with one worker and one connection.  Impossible:
#   - a batch that never forms: the webhooks queued behind a busy
#     connection go in one statement when it comes free
#   - a webhook answered from another's row: each answer names its own
#     event and credit, as stored
#   - one webhook's failure failing the others of its batch: it alone gets
#     503, and nothing of it is stored; the rest get 200
#   - a batch refused as a whole losing or failing a webhook: each is sent
#     again alone, and answered 200
#   - a database without ingest_batch() failing webhooks: the worker sends
#     them one by one from then on, and says so once in the log
#   - a webhook of a batch whose client went away stopping the others

use strict;
use warnings;

use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Worker;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

my $secret = 'whsec_batch';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");

$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    mt5_credit_postgres_pool_size 1;
    mt5_credit_postgres_batch 16;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /status { mt5_credit_status; }
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
    }
HTTP

$sb->register_account('erin', 5001);

# waits for a condition; says which one timed out
sub wait_until {
    my ($what, $cond) = @_;
    return 1 if Mt5Credit::Worker::wait_for($cond, 20);
    diag("timed out waiting for $what");
    return 0;
}

my $n = 0;

# a signed paid event for a new deposit of its own: [ body, pi, event ]
sub payment {
    my (%o) = @_;
    $n++;
    my $dep = $sb->create_deposit(client => 'erin', login => 5001,
                                  amount => 1000 + $n);
    my $id = $o{id} || "evt_b_$n";
    my $body = stripe_event(type => 'payment_intent.succeeded',
                            deposit => $dep, amount => 1000 + $n,
                            pi => "pi_b_$n", id => $id);
    return { body => $body, pi => "pi_b_$n", id => $id, deposit => $dep };
}

sub post_start {
    my ($p) = @_;
    return $sb->http_start('POST', '/webhooks/stripe', body => $p->{body},
                           headers => stripe_headers($secret, $p->{body}));
}

# The one connection held: a first webhook waits on its deposit's lock,
# the others queue behind it; then the lock goes and everything is
# answered.  Returns the answers of the queued ones, in order.
sub behind_a_busy_connection {
    my ($first, @rest) = @_;
    my $s = $sb->psql_session;
    $s->send("BEGIN; SELECT 1 FROM mt5credit.deposit WHERE reference = "
             . "'$first->{deposit}' FOR UPDATE;");
    wait_until('the lock', sub {
        $sb->sql1("SELECT count(*) FROM pg_stat_activity WHERE state = "
                  . "'idle in transaction'") == 1 });
    my $f = post_start($first);
    wait_until('the first webhook waiting on the lock', sub {
        $sb->sql1("SELECT count(*) FROM pg_stat_activity WHERE usename = "
                  . "'edge' AND wait_event_type = 'Lock'") == 1 });
    my @s = map { post_start($_) } @rest;
    wait_until('the rest queued', sub {
        $sb->status_value('mt5credit_pg_queue') == @rest });
    $s->send('COMMIT;');
    $s->close;
    my $r0 = Mt5Credit::Sandbox::http_end($f);
    return ($r0, map { Mt5Credit::Sandbox::http_end($_) } @s);
}

my $json = JSON::PP->new;

sub stored_credit {
    my ($pi) = @_;
    return $sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE "
                     . "provider_payment_id = '$pi'") // '';
}

# --- a batch forms, and each gets its own answer ---------------------------

my $statements = $sb->status_value('mt5credit_pg_statements_total');
my $batched = $sb->status_value('mt5credit_pg_batched_total');
my @p = map { payment() } 1 .. 11;
my @r = behind_a_busy_connection(@p);

is_deeply([ map { $_->{status} } @r ], [ (200) x 11 ],
          'the first webhook and the ten queued behind it: all 200');
is($sb->status_value('mt5credit_pg_batched_total') - $batched, 10,
   'the ten queued went in a batch');
is($sb->status_value('mt5credit_pg_statements_total') - $statements, 2,
   '... two statements in all: the first alone, the ten together');
my @own = grep {
    my $a = $json->decode($r[$_]{body});
    $a->{outcome} eq 'credit_created'
        && $a->{credit} eq stored_credit($p[$_]{pi})
        && $a->{event} eq $sb->sql1("SELECT id FROM mt5credit.webhook_event "
                                    . "WHERE provider_event_id = "
                                    . "'$p[$_]{id}'")
} 0 .. $#p;
is(scalar @own, 11, 'each answer names its own event and credit, as '
   . 'stored');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE "
             . "provider_payment_id LIKE 'pi_b_%'"), 11, '11 credits');

# --- one webhook of a batch failing -----------------------------------------

$sb->psql(<<'SQL');
CREATE FUNCTION mt5credit.test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.provider_event_id = 'evt_poison' THEN
        RAISE EXCEPTION 'poisoned event';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER test_poison BEFORE INSERT ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION mt5credit.test_poison();
SQL

$batched = $sb->status_value('mt5credit_pg_batched_total');
@p = (payment(), payment(), payment(), payment(id => 'evt_poison'),
      payment(), payment());
@r = behind_a_busy_connection(@p);
is_deeply([ map { $_->{status} } @r ], [ 200, 200, 200, 503, 200, 200 ],
          'a batch with one webhook whose ingest() raises: it alone gets '
          . '503');
is($sb->status_value('mt5credit_pg_batched_total') - $batched, 5,
   '... and it was in the batch');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event WHERE "
             . "provider_event_id = 'evt_poison'"), 0,
   '... nothing of it stored (its provider will retry)');
is(scalar(grep { stored_credit($_->{pi}) ne '' } @p), 5,
   '... the other five made their credits');
like(join('', $sb->error_log), qr/ingest failed: poisoned event/,
     '... and the log says why it failed');

# --- a batch refused as a whole --------------------------------------------

$sb->psql("REVOKE EXECUTE ON FUNCTION mt5credit.ingest_batch(text[], "
          . "text[], bytea[], text[], bigint[], text[]) FROM mt5credit_ingest");
$statements = $sb->status_value('mt5credit_pg_statements_total');
@p = map { payment() } 1 .. 5;
@r = behind_a_busy_connection(@p);
is_deeply([ map { $_->{status} } @r ], [ (200) x 5 ],
          'a batch the server refused (permission denied): every webhook '
          . 'still 200');
is(scalar(grep { stored_credit($_->{pi}) ne '' } @p), 5,
   '... each made its credit, sent again alone');
is($sb->status_value('mt5credit_pg_statements_total') - $statements, 1 + 1 + 4,
   '... the first, the refused batch, then the four one by one');
like(join('', $sb->error_log),
     qr/a statement of 4 webhooks failed, each is sent alone/,
     '... and the log says so');
$sb->psql("GRANT EXECUTE ON FUNCTION mt5credit.ingest_batch(text[], "
          . "text[], bytea[], text[], bigint[], text[]) TO mt5credit_ingest");

# --- a client gone while its batch runs ------------------------------------

@p = map { payment() } 1 .. 4;
{
    my $s = $sb->psql_session;
    $s->send("BEGIN; SELECT 1 FROM mt5credit.deposit WHERE reference = "
             . "'$p[0]{deposit}' FOR UPDATE;");
    wait_until('the lock', sub {
        $sb->sql1("SELECT count(*) FROM pg_stat_activity WHERE state = "
                  . "'idle in transaction'") == 1 });
    my $f = post_start($p[0]);
    wait_until('the first webhook waiting', sub {
        $sb->sql1("SELECT count(*) FROM pg_stat_activity WHERE usename = "
                  . "'edge' AND wait_event_type = 'Lock'") == 1 });
    my @s = map { post_start($_) } @p[1 .. 3];
    wait_until('three queued', sub { $sb->status_value('mt5credit_pg_queue') == 3 });
    close $s[1];    # its client goes away while it waits
    sleep 0.2;
    $s->send('COMMIT;');
    $s->close;
    my @a = map { Mt5Credit::Sandbox::http_end($_) } $f, @s[0, 2];
    is_deeply([ map { $_->{status} } @a ], [ 200, 200, 200 ],
              'a client gone while queued: the others of the batch 200');
    ok(wait_until('its credit', sub { stored_credit($p[2]{pi}) ne '' }),
       '... its webhook stored all the same, or found as a duplicate '
       . 'when the provider retries');
}

# --- a database without ingest_batch() -----------------------------------

$sb->psql("ALTER FUNCTION mt5credit.ingest_batch(text[], text[], bytea[], "
          . "text[], bigint[], text[]) RENAME TO ingest_batch_gone");
@p = map { payment() } 1 .. 4;
@r = behind_a_busy_connection(@p);
is_deeply([ map { $_->{status} } @r ], [ (200) x 4 ],
          'no ingest_batch() in the database: every webhook 200');
like(join('', $sb->error_log),
     qr/the database has no ingest_batch\(\) \(sql\/062\): webhooks are sent one by one/,
     '... the log says the worker sends them one by one');
$batched = $sb->status_value('mt5credit_pg_batched_total');
@p = map { payment() } 1 .. 4;
@r = behind_a_busy_connection(@p);
is_deeply([ map { $_->{status} } @r ], [ (200) x 4 ],
          '... and later webhooks, queued together, 200');
is($sb->status_value('mt5credit_pg_batched_total') - $batched, 0,
   '... sent one by one, not tried as a batch again');
is(scalar(() = join('', $sb->error_log) =~ /has no ingest_batch/g), 1,
   '... said once');

is(scalar($sb->log_problems), 0, 'no alert, crit or crash in the log')
    or diag(join "\n", $sb->log_problems);

done_testing();
