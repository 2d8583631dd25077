#!/usr/bin/perl
#
# Concurrency through a live nginx (two workers, a small pool).
# Impossible:
#   - one event delivered 100 times at once making more than one event
#     row or more than one credit, or any of the 100 getting an error
#   - two different events about one payment, racing, making two credits
#   - a burst larger than the pool losing or failing deliveries
#   - a connection serving more than mt5_credit_postgres_max_requests
#     statements (it is replaced, and nobody notices), webhooks sent alone
#     or several in one statement

use strict;
use warnings;

use Test::More;
use POSIX qw(_exit);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Provider qw(stripe_event stripe_headers);

my $secret = 'whsec_concurrency';

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");

$sb->start_nginx(<<"HTTP", workers => 2);
    mt5_credit_postgres "%%PG%%";
    mt5_credit_postgres_pool_size 3;
    mt5_credit_postgres_queue 512;
    mt5_credit_postgres_max_requests 25;
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

$sb->register_account('dave', 4001);

sub new_deposit {
    return $sb->create_deposit(client => 'dave', login => 4001,
                               amount => $_[0]);
}

# Sends every [path, body] at once from its own process; returns the
# responses in order.
sub burst {
    my (@requests) = @_;
    my @pids;
    for my $i (0 .. $#requests) {
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            my ($body) = @{ $requests[$i] };
            my $res = eval {
                $sb->http('POST', '/webhooks/stripe', body => $body,
                          headers => stripe_headers($secret, $body))
            } || { status => 0, body => $@ };
            open my $fh, '>', $sb->dir . "/burst-$i" or _exit(1);
            print $fh "$res->{status} $res->{body}";
            close $fh;
            _exit(0);
        }
        push @pids, $pid;
    }
    waitpid($_, 0) for @pids;
    my @out;
    for my $i (0 .. $#requests) {
        open my $fh, '<', $sb->dir . "/burst-$i" or die;
        push @out, scalar <$fh>;
        close $fh;
        unlink $sb->dir . "/burst-$i";
    }
    return @out;
}

# --- one event, 100 times at once -----------------------------------------

my $dep = new_deposit(50000);
my $event = stripe_event(deposit => $dep, amount => 50000, pi => 'pi_burst1',
                         id => 'evt_burst1');
my @res = burst(map { [ $event ] } 1 .. 100);

is(scalar(grep { /^200 / } @res), 100, 'all 100 deliveries got 200');
is(scalar(grep { /"credit_created"/ } @res), 1, 'exactly one created the credit');
is(scalar(grep { /"duplicate"/ } @res), 99, 'the other 99 were duplicates');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event "
             . "WHERE provider_event_id = 'evt_burst1'"), 1, 'one event row');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
             . "WHERE provider_payment_id = 'pi_burst1'"), 1, 'one credit');

# --- two event types for one payment, racing ---------------------------------

{
    my $dep2 = new_deposit(25000);
    my @events;
    for my $round (1 .. 10) {
        push @events,
            [ stripe_event(type => 'checkout.session.completed',
                           deposit => $dep2, amount => 25000,
                           pi => 'pi_race2') ],
            [ stripe_event(type => 'payment_intent.succeeded',
                           deposit => $dep2, amount => 25000,
                           pi => 'pi_race2') ];
    }
    @res = burst(@events);
    is(scalar(grep { /^200 / } @res), 20, '20 events about one payment: all 200');
    is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event "
                 . "WHERE raw_body LIKE '%pi_race2%'::bytea"), 20,
       'every event is stored');
    is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                 . "WHERE provider_payment_id = 'pi_race2'"), 1,
       'and they made one credit');
}

# --- a burst of distinct payments, wider than the pool ---------------------

{
    my @events;
    for my $i (1 .. 60) {
        my $d = new_deposit(1000 + $i);
        push @events, [ stripe_event(deposit => $d, amount => 1000 + $i,
                                     pi => "pi_wide_$i") ];
    }
    @res = burst(@events);
    is(scalar(grep { /"credit_created"/ } @res), 60,
       '60 payments at once through 2 x 3 connections: 60 credits');
    is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                 . "WHERE provider_payment_id LIKE 'pi_wide_%'"), 60,
       'all stored');
}

my $stats = $sb->http('GET', '/status')->{body};
my ($connects) = $stats =~ /^mt5credit_pg_connects_total (\d+)$/m;
my ($statements) = $stats =~ /^mt5credit_pg_statements_total (\d+)$/m;
my ($batched) = $stats =~ /^mt5credit_pg_batched_total (\d+)$/m;
# 180 webhooks, some sent together (mt5_credit_postgres_batch): however
# many statements that made, at most 25 per connection
ok($connects >= $statements / 25,
   "connections were recycled after 25 statements ($statements statements, "
   . "$connects connections opened)");
ok($statements + $batched >= 180 && $statements <= 180,
   "every webhook was sent, alone or in a batch ($batched in batches)");

my $status = $sb->http('GET', '/nonexistent')->{status};
is($status, 404, 'nginx still serves other requests');

is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');
is($sb->stop_nginx, 0, 'nginx stops cleanly');
is_deeply([ $sb->log_problems ], [], 'and leaves no socket open');

done_testing;
