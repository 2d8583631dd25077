#!/usr/bin/perl
#
# The database goes back in time: a failover under asynchronous
# replication, a restore from a backup or a snapshot.  Credits whose
# deals MT5 made are pending again in it.  Reproduced before: 5 credits
# made, the database brought back to a snapshot taken while they were
# pending, and the worker claimed each again as attempt 1 and sent
# trade/balance with no lookup: 10 deals.  With a snapshot taken after
# ingest, the worker crediting, then the snapshot brought back, this
# makes impossible:
#   - a second deal for any of them, whether the snapshot comes back as a
#     plain copy (same timeline) or as a failover would (promoted: a new
#     timeline)
#   - a credit of the lost timeline ending anything but done with its
#     original ticket, found by its reference
#   - the rewind going unnoticed by a person: a critical case
#   - a new credit taking a number the lost timeline gave out (its
#     reference is its payment's since 066; the number still names it)
#   - a withdrawal approved and debited in the lost timeline, approved
#     again after the restore, debited twice: its debit ("wd:<id>") is
#     looked up first and found
#   - a credit lost entirely (made after the snapshot) keeping the worker
#     in a rewind for ever: every round marked the pending credits for
#     lookup again, and nothing new was claimed
#   - a kept claim torn or lost by the file system: it is one line inside
#     a sector, overwritten in place and fdatasync'ed
#   - one rewind handled twice: the promoted copy's new timeline, recorded
#     by the rewind its lost claim proved, opens no second case (073)

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $PGBIN = $Mt5Credit::Sandbox::PGBIN;
my $data = $sb->dir . '/pg';

my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
$st->account(login => 70001);

sub cp_tree {
    my ($from, $to) = @_;
    system('rm', '-rf', $to) == 0 or die;
    system('cp', '-a', $from, $to) == 0 or die "cp $from $to";
}

my $nwd = 0;

sub scenario {
    my ($what, $promote) = @_;

    my @ids = map { $st->pay(login => 70001, amount => 1000 * $_ + 7) } 1 .. 5;

    # a withdrawal, prepared by one person before the snapshot
    $nwd++;
    my $wd = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'rewind-wd-$nwd', 'stripe', 'live1', 70001, 500, 'USD', "
        . "'ba_rewind_$nwd')", user => 'portal');
    my $wid = $sb->sql1("SELECT id FROM mt5credit.withdrawal WHERE "
                        . "reference = '$wd'");
    my $approve = sub {
        my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$wd', "
                               . "'ok')", user => 'ops_alice');
        $sb->psql("SELECT mt5credit.withdrawal_approve('$wd', '$digest', "
                  . "'ok')", user => 'ops_bob');
        return $sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE "
                         . "withdrawal_id = $wid");
    };

    # the snapshot, taken while they are pending
    $sb->stop_postgres;
    cp_tree($data, "$data-snapshot");
    $sb->start_postgres;

    $st->start_worker('w1', %fast);
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @ids }, 60),
       "$what: the worker credits all five");
    my %ticket = map { $_ => $st->credit($_)->{ticket} } @ids;

    # two more, made after the snapshot: the restore loses them entirely
    my @lost = map { $st->pay(login => 70001, amount => 100 * $_ + 3) } 1 .. 2;
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @lost }, 60),
       "$what: two credits made after the snapshot");
    my $debit = $approve->();
    ok($st->wait_status($debit, 'done', 30),
       "$what: the withdrawal approved and debited after the snapshot");
    my $wd_ticket = $st->credit($debit)->{ticket};
    my @lost_refs = map { $st->ref_of($_) } @lost;
    $st->stop_worker('w1');

    # the database comes back as it was in the snapshot
    $sb->stop_postgres;
    cp_tree("$data-snapshot", $data);
    if ($promote) {
        open my $fh, '>', "$data/standby.signal" or die;
        close $fh;
    }
    $sb->start_postgres;
    if ($promote) {
        Mt5Credit::Sandbox::run_cmd("$PGBIN/pg_ctl", '-D', $data, '-w',
                                    'promote');
        $sb->psql('CHECKPOINT');
        is($sb->sql1('SELECT timeline_id FROM pg_control_checkpoint()') > 1
           ? 'new' : 'same', 'new', "$what: the database is on a new timeline");
    }
    # pending, or unknown when made within a week of an earlier rewind
    is(scalar(grep { $st->status_of($_) =~ /^(pending|unknown)$/ } @ids), 5,
       "$what: the database holds all five as not made again");

    $st->start_worker('w1', %fast);
    ok(Mt5Credit::Worker::wait_for(sub {
           !grep { $st->status_of($_) ne 'done' } @ids }, 60),
       "$what: all five end done");
    is(join(' ', map { scalar @{ $st->deals_of($_) } } @ids),
       '1 1 1 1 1', "$what: one deal each, never a second");
    is(join(' ', map { $st->credit($_)->{ticket} } @ids),
       join(' ', map { $ticket{$_} } @ids),
       "$what: each with its original ticket, found by its reference");
    like(join(' ', @{ $st->history_of($ids[0]) }), qr/pending>unknown/,
         "$what: looked up before any call (pending > unknown)");
    like(Mt5Credit::Worker::log_of($sb, 'w1'),
         qr/ALERT.*database_rewound.*went back in time/,
         "$what: a person is alerted");

    # the withdrawal is back to requested: two people approve it again
    my $again = $approve->();
    ok($st->wait_status($again, 'done', 30),
       "$what: approved again after the restore, its debit is done");
    is(scalar @{ $st->deals_with("wd:$wid") }, 1,
       "$what: ... with the one deal wd:$wid, never a second");
    is($st->credit($again)->{ticket}, $wd_ticket,
       "$what: ... found by its reference: the lost timeline's deal");
    like(join(' ', @{ $st->history_of($again) }), qr/^->pending pending>unknown/,
         "$what: ... looked up before any call");

    my $new = $st->pay(login => 70001, amount => 4242);
    cmp_ok($new, '>', $lost[-1],
           "$what: a new credit never takes a number the lost timeline used");
    ok($st->wait_status($new, 'done'), "$what: ... and is credited");
    is(scalar @{ $st->deals_of($new) }, 1,
       "$what: ... its reference on one deal only");
    is(join(' ', map { scalar @{ $st->deals_with($_) } } @lost_refs), '1 1',
       "$what: the lost timeline's deals stay alone under theirs");
    $st->stop_worker('w1');
}

scenario('a plain copy of the snapshot', 0);
my $cases = $sb->sql1("SELECT count(*) || ' ' || min(severity) FROM "
                      . "mt5credit.case WHERE kind = 'database_rewound'");
is($cases, '1 critical', 'a critical database_rewound case');

scenario('the snapshot promoted, as a failover', 1);
is($sb->sql1("SELECT count(*) FROM mt5credit.case "
             . "WHERE kind = 'database_timeline_changed'"), 0,
   'the promoted snapshot\'s rewind recorded its timeline: it is not '
   . 'handled again as an unrecorded one');
is($sb->sql1("SELECT count(*) FROM mt5credit.database_timeline t "
             . "JOIN mt5credit.database_rewind r ON r.id = t.rewind_id "
             . "WHERE t.timeline = 2"), 1,
   '... recorded with that rewind');

# nothing lost, nothing to do: a worker restarted on the same database
$st->start_worker('w1', %fast);
my $id = $st->pay(login => 70001, amount => 4321);
ok($st->wait_status($id, 'done'), 'after it all, a new deposit is credited');
like(join(' ', @{ $st->history_of($id) }),
     qr/^->pending pending>unknown unknown>pending pending>claimed claimed>done$/,
     '... looked up first, within a week of a rewind (its payment may be '
     . 'one the lost timeline credited), then made');

# the kept claim is the file's one line, overwritten in place (its inode
# kept: no new file and rename per claim), and it names the last claim
my ($state) = glob($sb->dir . '/worker-state/worker-*.state');
my $inode = (stat $state)[1];
my $id2 = $st->pay(login => 70001, amount => 4322);
ok($st->wait_status($id2, 'done'), 'one more credit');
my $line = do { open my $f, '<', $state or die; local $/; <$f> };
my $att2 = $st->credit($id2)->{attempts};
like($line, qr/^\d+ \d+ $id2 $att2 +\n\z/,
     'the state file holds that claim, one padded line');
is(length $line, 128, '... of 128 bytes: one write inside a sector');
is((stat $state)[1], $inode, '... written in place, the same file');

done_testing();
