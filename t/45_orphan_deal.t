#!/usr/bin/perl
#
# A deal made under a lease that was lost while the call ran: the sweeper
# (or a database clock, a failover) took the claim back, and the worker
# then holds a real MT5 ticket that its record cannot attach to the row.
# Impossible:
#   - that ticket being only a log line: a critical orphan_deal case opens
#     at once, with the credit, the orphan ticket and the attempt, and a
#     person is alerted
#   - the case being opened when the ticket is the credit's own (the
#     resolver recorded the same deal first): no case for no problem
#   - the credit being credited again: the resolver finds the one deal

use strict;
use warnings;

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

$st->account(login => 70001);
$st->start_worker('w1', call_timeout => 3, lease => 20, settle_margin => 1);

# the call takes 2 s; meanwhile the claim is taken from the worker, as the
# sweeper takes an expired one
$sim->fault(kind => 'latency', endpoint => '/api/trade/balance', ms => 2000,
            count => 1);
my $before = $sim->requests('/api/trade/balance') // 0;
my $id = $st->pay(login => 70001, amount => 4242);

ok(Mt5Credit::Worker::wait_for(sub {
       ($sim->requests('/api/trade/balance') // 0) > $before }, 15),
   'the balance call reached MT5');
is($sb->sql1("UPDATE mt5credit.mt5_credit SET status = 'unknown' "
             . "WHERE id = $id AND status = 'claimed' RETURNING attempts"),
   1, 'its claim (attempt 1) is swept while the call runs');

my $case;
ok(Mt5Credit::Worker::wait_for(sub {
       $case = $sb->sql1("SELECT severity || ' ' || (details->>'orphan_ticket')"
                         . " || ' ' || (details->>'attempt') FROM "
                         . "mt5credit.case WHERE credit_id = $id AND kind = "
                         . "'orphan_deal'");
       defined $case && $case ne '' }, 15),
   'a deal made under the lost lease opens an orphan_deal case at once');

my $deals = $st->deals_of($id);
is(scalar @$deals, 1, 'MT5 has the one deal');
is($case, "critical $deals->[0]{Deal} 1",
   '... critical, naming the orphan ticket and the attempt');
like(Mt5Credit::Worker::log_of($sb, 'w1'),
     qr/ALERT.*orphan_deal.*deal $deals->[0]{Deal} made under a lost lease/,
     'a person is alerted');

ok($st->wait_status($id, 'done', 30),
   'the resolver then finds that deal: done');
is($st->credit($id)->{ticket}, $deals->[0]{Deal}, '... with its ticket');
is(scalar @{ $st->deals_of($id) }, 1, 'never a second deal');
is($sb->sql1("SELECT status FROM mt5credit.case WHERE credit_id = $id "
             . "AND kind = 'orphan_deal'"), 'open',
   'the case stays open for a person');

# the same ticket recorded already: nothing to tell
is($sb->sql1("SELECT mt5credit.credit_orphan_deal($id, 1, "
             . "$deals->[0]{Deal}, 'test', '{}')"), 'f',
   'a ticket the credit already carries opens no case');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE credit_id = $id "
             . "AND kind = 'orphan_deal'"), 1, '... still the one case');

done_testing();
