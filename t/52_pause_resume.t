#!/usr/bin/perl
#
# The kill switch: mt5credit pause / resume (sql/046_pause.sql), with
# real workers, nginx and the MT5 simulator.  Impossible:
#   - a paused server's credit claimed once the pause is committed, in
#     the middle of a drain; or the call already in flight abandoned (it
#     finishes and records its deal)
#   - a pause of one server holding another's credits
#   - a paused provider's webhook lost or refused: it is stored and
#     answered 200, and only its credit waits
#   - a paused kind claimed (refunds) while deposits go on
#   - a resume leaving anything behind: every held credit made, one deal
#     each
#   - a pause with no reason, of an unknown scope or target, or twice at
#     once; a resume of what is not paused
#   - a pause or resume by anyone but an operator (worker, edge, portal,
#     reader, reconciliation)
#   - a pause's record rewritten or deleted, even by the schema's owner
#   - status hiding a pause: who, since when, why, what it holds, in the
#     table and as Prometheus gauges

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Provider;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $live1 = $st->sim;
my $live2 = Mt5Credit::Mt5Sim->new($sb, name => 'live2sim');

$st->account(login => 70501);
$live2->add_account(login => 71501, group => 'real\\usd', balance => '0.00',
                    credit => '0.00', rights => 1);
$sb->psql("SELECT mt5credit.register_account('bob', 'live2', 71501, 'USD')",
          user => 'portal');
$sb->psql('CREATE ROLE auditor LOGIN IN ROLE mt5credit_reader');

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub as_person {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, @args, '--database', "$db user=$who");
}

my $seq = 0;
sub pay_live2 {
    my ($amount) = @_;
    $seq++;
    my $dep = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
                        . "'bob', 'pause-key-$seq', 'stripe', 'live2', "
                        . "71501, $amount, 'USD')", user => 'portal');
    my $res = $st->webhook(Mt5Credit::Provider::stripe_event(
        deposit => $dep, amount => $amount, pi => "pi_pause2_$seq"));
    return $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
}

sub count_where {
    my ($where) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE $where");
}

sub start {
    my ($name) = @_;
    my $conf = Mt5Credit::Worker::config($sb, $name,
        servers => [ [ 'live1', $live1, sessions => 1 ],
                     [ 'live2', $live2, sessions => 1 ] ],
        call_timeout => 3, lease => 20, poll_interval => 1);
    Mt5Credit::Worker::start($sb, $name, $conf);
}

# --- a server paused in the middle of a drain --------------------------------------

my @live1 = map { $st->pay(login => 70501, amount => 1000 + $_) } 1 .. 8;
is(scalar(grep { defined } @live1), 8, 'eight credits on live1, pending');

# each balance call takes 700 ms: the drain is slow enough to pause in
$live1->fault(kind => 'latency', ms => 700, endpoint => '/api/trade/balance',
             count => 0);    # until cleared
start('w1');

ok(Mt5Credit::Worker::wait_for(sub { count_where("status = 'done' AND "
                                                 . "mt5_server = 'live1'") >= 2 }, 30),
   'the worker drains live1');

my ($rc, $out) = as_person('ops_alice', 'pause', 'server', 'live1',
                           '--reason', 'MT5 live1 answers slowly: broker '
                           . 'maintenance');
is($rc, 0, 'ops_alice pauses server live1') or diag $out;
like($out, qr/^server live1 paused \(pause \d+\)$/m, '... and is told so');
my $paused_at = $sb->sql1("SELECT paused_at FROM mt5credit.pause "
                          . "WHERE scope = 'server' AND target = 'live1'");

ok(Mt5Credit::Worker::wait_for(sub { count_where("status = 'claimed'") == 0 }, 10),
   'the call in flight at the pause finishes');
sleep 3;

is($sb->sql1("SELECT count(*) FROM mt5credit.credit_history h "
             . "JOIN mt5credit.mt5_credit c ON c.id = h.credit_id "
             . "WHERE c.mt5_server = 'live1' AND h.to_status = 'claimed' "
             . "AND h.at > '$paused_at'"), 0,
   'no live1 credit claimed after the pause committed');
my $done_at_pause = count_where("status = 'done' AND mt5_server = 'live1'");
my $held = count_where("status = 'pending' AND mt5_server = 'live1'");
cmp_ok($held, '>=', 1, "credits held by the pause ($held pending)");
is($done_at_pause + $held, 8, '... the rest done: none failed or unknown');
is(count_where("status NOT IN ('done', 'pending')"), 0,
   '... and nothing left claimed or unknown');
is(scalar(grep { $_->{Comment} =~ /^dep:/ } @{ $live1->ledger->{deals} }),
   $done_at_pause, 'live1 has exactly the deals of the done credits');

# another server is not held
my @live2 = map { pay_live2(2000 + $_) } 1 .. 3;
ok(Mt5Credit::Worker::wait_for(sub {
       count_where("status = 'done' AND mt5_server = 'live2'") == 3 }, 30),
   'live2 credits made during live1\'s pause');
is(count_where("status = 'pending' AND mt5_server = 'live1'"), $held,
   '... while live1\'s still wait');

# --- what the pause says -------------------------------------------------------------

($rc, $out) = as_person('ops_bob', 'pause', 'list');
is($rc, 0, 'pause list') or diag $out;
like($out, qr/^\d+\s+server\s+live1\s+ops_alice\s+\S+Z\s+$held\s+MT5 live1 answers slowly/m,
     '... shows who paused live1, since when, what it holds and why');

($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
                                     "$db user=worker");
is($rc, 0, 'status') or diag $out;
like($out, qr/^paused: 1\n  server live1 since \S+Z by ops_alice, holding $held: MT5 live1 answers slowly/m,
     '... names the pause');
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--prometheus',
                                     '--database', "$db user=auditor");
is($rc, 0, 'status --prometheus, as a reader') or diag $out;
like($out, qr/^mt5credit_pause_active\{scope="server",target="live1"\} 1$/m,
     '... mt5credit_pause_active');
like($out, qr/^mt5credit_pause_held\{scope="server",target="live1"\} $held$/m,
     '... mt5credit_pause_held');
like($out, qr/^# TYPE mt5credit_pause_active gauge$/m, '... a gauge');

# --- refused -------------------------------------------------------------------------

($rc, $out) = as_person('ops_bob', 'pause', 'server', 'live1', '--reason',
                        'again');
is($rc, 1, 'a second pause of live1 is refused');
like($out, qr/already paused, since .* by ops_alice: MT5 live1 answers slowly/,
     '... saying by whom, since when and why');
($rc, $out) = as_person('ops_bob', 'pause', 'server', 'live2');
is($rc, 2, 'a pause without --reason is refused before the database');
like($out, qr/--reason is required/, '... saying so');
($rc, $out) = as_person('ops_bob', 'pause', 'kind', 'bonus', '--reason',
                        'no such kind');
is($rc, 1, 'a pause of an unknown kind is refused');
like($out, qr/no kind is named "bonus": deposit, refund/, '... naming the kinds');
($rc, $out) = as_person('ops_bob', 'pause', 'galaxy', 'x', '--reason', 'xyz');
is($rc, 2, 'an unknown scope is refused');
($rc, $out) = as_person('ops_bob', 'resume', 'server', 'live2');
is($rc, 1, 'a resume of what is not paused is refused');
like($out, qr/server live2 is not paused/, '... saying so');
like($sb->psql("SELECT mt5credit.pause_set('server', 'live2', '  ')",
               user => 'ops_bob', may_fail => 1, raw => 1),
     qr/needs its reason/, 'a blank reason is refused by the database too');

for my $role (qw(worker edge portal auditor recon query)) {
    like($sb->psql("SELECT mt5credit.pause_set('server', 'live2', 'not "
                   . "mine to do')", user => $role, may_fail => 1, raw => 1),
         qr/permission denied for function pause_set/,
         "$role may not pause");
    like($sb->psql("SELECT mt5credit.pause_resume('server', 'live1', NULL)",
                   user => $role, may_fail => 1, raw => 1),
         qr/permission denied for function pause_resume/,
         "... or resume");
}
like($sb->psql("UPDATE mt5credit.pause SET reason = 'rewritten'",
               user => 'ops_bob', may_fail => 1, raw => 1),
     qr/permission denied for table pause/, 'an operator cannot write the table');
like($sb->psql("SET ROLE mt5credit_owner; UPDATE mt5credit.pause SET "
               . "reason = 'rewritten'", may_fail => 1, raw => 1),
     qr/a pause only changes by being resumed, once/,
     'the owner cannot rewrite a pause');
like($sb->psql("SET ROLE mt5credit_owner; DELETE FROM mt5credit.pause",
               may_fail => 1, raw => 1),
     qr/a pause is never deleted/, '... or delete one');
is($sb->sql1("SELECT count(*) FROM mt5credit.pause"), 1,
   'one pause, as made');

# --- resume ---------------------------------------------------------------------------

($rc, $out) = as_person('ops_bob', 'resume', 'server', 'live1', '--note',
                        'broker done');
is($rc, 0, 'ops_bob resumes live1') or diag $out;
ok(Mt5Credit::Worker::wait_for(sub {
       count_where("status = 'done' AND mt5_server = 'live1'") == 8 }, 40),
   'every held live1 credit is made after the resume');
my %deals;
$deals{$_->{Comment}}++ for @{ $live1->ledger->{deals} };
is_deeply([ grep { $deals{$_} != 1 } keys %deals ], [],
          '... each exactly once');
is(scalar(keys %deals), 8, '... eight deals for eight credits');
is_deeply($sb->psql("SELECT paused_by, resumed_by, resume_note FROM "
                    . "mt5credit.pause WHERE target = 'live1'"),
          [ [ 'ops_alice', 'ops_bob', 'broker done' ] ],
          'the record keeps who paused, who resumed, and the note');
($rc, $out) = as_person('ops_bob', 'pause', 'list', '--all');
like($out, qr/resumed \S+Z by ops_bob: broker done/, 'pause list --all shows it');
($rc, $out) = as_person('ops_bob', 'pause', 'list');
like($out, qr/^\(0 pauses\)$/m, '... and pause list has none active');
$live1->clear_faults;

# --- a provider paused: webhooks kept, crediting waits ----------------------------------

($rc, $out) = as_person('ops_bob', 'pause', 'provider', 'stripe', '--reason',
                        'Stripe account under review');
is($rc, 0, 'ops_bob pauses provider stripe') or diag $out;
my $events = $sb->sql1("SELECT count(*) FROM mt5credit.webhook_event");
my $c1 = $st->pay(login => 70501, amount => 3001);
my $c2 = pay_live2(3002);
ok($c1 && $c2, 'webhooks of the paused provider are answered 200 with '
   . 'their credit');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event"), $events + 2,
   '... and stored');
sleep 3;
is($st->status_of($c1), 'pending', 'its credits wait, on live1');
is($st->status_of($c2), 'pending', '... and on live2');
($rc, $out) = as_person('ops_alice', 'pause', 'list');
like($out, qr/provider\s+stripe\s+ops_bob\s+\S+\s+2\s+Stripe account/,
     'the pause holds the two');
($rc, $out) = as_person('ops_alice', 'resume', 'provider', 'stripe');
is($rc, 0, 'ops_alice resumes it (no note needed)') or diag $out;
ok($st->wait_status($c1, 'done', 20) && $st->wait_status($c2, 'done', 20),
   'both are made after the resume');

# --- a kind paused: refunds wait, deposits go on ------------------------------------------

($rc, $out) = as_person('ops_alice', 'pause', 'kind', 'refund', '--reason',
                        'refund debits under investigation');
is($rc, 0, 'ops_alice pauses kind refund') or diag $out;
my $refund = $st->refund(of => $c1, amount => 3001);
ok($refund, 'a refund arrives (200)');
my $c3 = $st->pay(login => 70501, amount => 3003);
ok($st->wait_status($c3, 'done', 20), 'a deposit is still made');
is($st->status_of($refund), 'pending', '... while the refund waits');
as_person('ops_alice', 'resume', 'kind', 'refund');
ok($st->wait_status($refund, 'done', 20), 'the refund is made after the resume');
is(scalar(@{ $st->deals_with($st->credit($refund)->{reference}) }), 1,
   '... once');

is($sb->sql1("SELECT count(*) FROM mt5credit.pause WHERE resumed_at IS NULL"),
   0, 'nothing left paused');
is(count_where("status <> 'done'"), 0, 'every credit done');

done_testing;
