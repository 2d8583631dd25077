#!/usr/bin/perl
#
# Through pgbouncer in session pooling, the mode this project supports
# beside direct connections (docs/operations.md): the edge keeps a named
# prepared statement per connection, and the worker's session cap holds
# session-level advisory locks, so transaction pooling is not supported.
# Impossible, with the edge and two workers connected only through
# pgbouncer (Debian's package, on a loopback port):
#   - a payment lost or credited twice, or stored without a durable
#     commit (the pooler drops the edge's startup options: ingest() pins
#     synchronous_commit itself)
#   - a credit on the wrong login, or of another amount
#   - the edge answering 200 while it cannot reach the database (the
#     bouncer stopped: 503), or not recovering when it is back

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Worker;

my $PGBOUNCER = '/usr/sbin/pgbouncer';
my $secret = 'whsec_bouncer_test';

my $sb = Mt5Credit::Sandbox->new;
my $pg = $sb->start_postgres;
my $dir = $sb->dir;

# pgbouncer: session pooling, trusting loopback as the sandbox's
# PostgreSQL does; the roles the programs log in as
my $bport = Mt5Credit::Sandbox::free_port();
$sb->write_file('userlist.txt', join '', map { qq("$_" ""\n) }
                qw(edge worker portal mt5));
my $ini = $sb->write_file('pgbouncer.ini', <<"INI");
[databases]
mt5credit = host=127.0.0.1 port=$pg dbname=mt5credit

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = session
; the startup options the edge and the workers send (statement_timeout,
; synchronous_commit) are not pgbouncer's to pass on: ignored, and the
; roles carry them (docs/operations.md); ingest() pins its own commit
ignore_startup_parameters = options
max_client_conn = 100
default_pool_size = 20
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI

# through the bouncer the startup options do not arrive: the role says
# off, and ingest() must pin its own commit (recorded by a trigger of the
# test's own)
$sb->psql(<<'SQL');
ALTER ROLE edge SET synchronous_commit = off;
CREATE TABLE public.seen (setting text);
CREATE FUNCTION public.record_setting() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO public.seen VALUES (current_setting('synchronous_commit'));
    RETURN NULL;
END
$$;
CREATE TRIGGER record_setting AFTER INSERT ON mt5credit.webhook_event
    FOR EACH ROW EXECUTE FUNCTION public.record_setting();
SQL

sub start_bouncer {
    $sb->spawn('pgbouncer', $PGBOUNCER, $ini);
    Mt5Credit::Sandbox::wait_port($bport, 'pgbouncer');
}
start_bouncer();

my $sim = Mt5Credit::Mt5Sim->new($sb);
for my $login (73801, 73802) {
    $sim->add_account(login => $login, group => 'real\\usd',
                      balance => '0.00', credit => '0.00', rights => 1);
    $sb->register_account('alice', $login, 'USD');
}

my $secrets = $sb->write_file('stripe.secret', "$secret\n");
$sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "host=127.0.0.1 port=$bport dbname=mt5credit user=edge";
    mt5_credit_postgres_pool_size 3;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
    }
HTTP

my @workers = map { "bw$_" } 1 .. 2;
for my $w (@workers) {
    my $conf = Mt5Credit::Worker::config($sb, $w,
        servers => [ [ 'live1', $sim ] ],
        database => "\"host=127.0.0.1 port=$bport dbname=mt5credit "
                    . 'user=worker"', redis => '');
    Mt5Credit::Worker::start($sb, $w, $conf);
}

sub post {
    my ($body) = @_;
    return $sb->http('POST', '/webhooks/stripe', body => $body,
                     headers => stripe_headers($secret, $body));
}

my (%want, @bodies);
for my $i (1 .. 40) {
    my $login = $i % 2 ? 73801 : 73802;
    my $amount = 1000 + $i;
    my $dep = $sb->create_deposit(client => 'alice', login => $login,
                                  amount => $amount);
    my $pi = "pi_bouncer_$i";
    $want{$pi} = "$login $amount";
    push @bodies, stripe_event(deposit => $dep, amount => $amount, pi => $pi);
}

my @status = map { post($_)->{status} } @bodies, @bodies[0 .. 9];
is(join(',', grep { $_ != 200 } @status), '',
   '40 payments and 10 redeliveries through pgbouncer: all 200');

is($sb->sql1("SELECT string_agg(DISTINCT setting, ',') FROM public.seen"),
   'on', '... each stored with synchronous_commit on (ingest() pins it; '
   . 'the role says off and the options were dropped)');

ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE status = "
                 . "'done'") == 40 }, 60),
   'two workers through pgbouncer make all 40 credits');

my %deals;
$deals{ $_->{Comment} }++ for @{ $sim->ledger->{deals} };
my $got = $sb->psql("SELECT provider_payment_id, reference, mt5_login, "
                    . "amount_minor FROM mt5credit.mt5_credit");
is(scalar(grep { ($deals{ $_->[1] } // 0) != 1 } @$got), 0,
   'each credit is exactly one MT5 deal');
is(scalar(grep { $want{ $_->[0] } ne "$_->[2] $_->[3]" } @$got), 0,
   '... on its deposit\'s login, for its amount');
is(scalar(@{ $sim->ledger->{deals} }), 40, 'and MT5 holds 40 deals, no more');

# the bouncer is the only way in: without it, no 200
$sb->reap('pgbouncer', 'TERM', 10);
my $dep = $sb->create_deposit(client => 'alice', login => 73801,
                              amount => 777);
my $late = stripe_event(deposit => $dep, amount => 777, pi => 'pi_bouncer_late');
is(post($late)->{status}, 503, 'pgbouncer stopped: the edge answers 503');
start_bouncer();
ok(Mt5Credit::Worker::wait_for(sub { post($late)->{status} == 200 }, 30),
   '... and 200 once it is back');
ok(Mt5Credit::Worker::wait_for(sub {
       $sb->sql1("SELECT status FROM mt5credit.mt5_credit WHERE "
                 . "provider_payment_id = 'pi_bouncer_late'") eq 'done' }, 60),
   'the workers, reconnected through it, credit that one too');

Mt5Credit::Worker::stop($sb, $_) for @workers;
done_testing();
