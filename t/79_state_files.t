#!/usr/bin/perl
#
# A worker's kept claims (state_dir, batch/credit/mc_rewind.c) over a
# long life.  Reproduced before: the default name is host:pid, each
# process that claimed once left worker-<host>_<pid>.state, nothing
# removed them, and at 257 files every worker on the host claimed nothing,
# logging an ERROR each round (a crash loop gets there in minutes).  A
# state_dir that could not be used was an ERROR each round too.  This
# makes impossible:
#   - files of restarted workers stopping every claim on the host: those
#     of this host's workers whose process is gone are removed once the
#     database holds every claim they kept, and no number of files stops
#     claiming
#   - a witness lost by that removal: the newest file stays (the latest
#     claim seen here tells the most of a later rewind), a live worker's
#     file stays, a file named otherwise stays, and a file whose claim the
#     database does not hold is a rewind, handled, never removed unseen
#   - a worker that cannot keep its claims running on: a missing, a
#     read-only, or a not-a-directory state_dir ends it at start, exit 2,
#     with the reason, before any claim

use strict;
use warnings;

use POSIX ();
use Test::More;
use Sys::Hostname qw(hostname);
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $dir = $sb->dir . '/worker-state';
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
$st->account(login => 70001);

# the file name a default-named worker of this host gets (mc_rewind.c)
(my $host = hostname()) =~ s/[^A-Za-z0-9.-]/_/g;
sub file_of { "$dir/worker-${host}_$_[0].state" }

sub state_files { [ sort glob("$dir/worker-*.state") ] }

sub once {
    my ($name, %opt) = @_;
    my $conf = $st->worker_config($name, %fast, %opt);
    return Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
}

# pids of no process now, just below the last pid the kernel gave: it
# hands pids out upwards and wraps round at pid_max, so these come round
# last (taken from the top of the range, a busy machine's next processes,
# the worker itself, could be given them)
sub dead_pids {
    my ($n) = @_;
    my $max = do { open my $f, '<', '/proc/sys/kernel/pid_max' or die;
                   scalar <$f> } + 0;
    my $last = fork // die "fork: $!";
    POSIX::_exit(0) unless $last;
    waitpid($last, 0);
    my @pids;
    for (my $p = $last - 1, my $seen = 0; @pids < $n && $seen < $max;
         $p--, $seen++) {
        $p = $max - 1 if $p <= 300;
        push @pids, $p if !kill(0, $p) && $!{ESRCH};
    }
    return @pids;
}

# ---- a crash loop's worth of files: claiming goes on -------------------

# one real claim by a default-named worker: its file is what each
# restarted process leaves
my $first = $st->pay(login => 70001, amount => 1007);
my ($rc, $out) = once('');
is($st->status_of($first), 'done', 'a default-named worker credits');
my @made = @{ state_files() };
is(scalar @made, 1, '... and leaves one file') or diag explain \@made;
like($made[0], qr{/worker-\Q$host\E_\d+\.state$},
     '... named for its host and pid');
my $line = do { open my $f, '<', $made[0] or die; local $/; <$f> };
unlink $made[0];

# 300 files of processes gone, each with a claim the database holds
my @dead = dead_pids(300);
is(scalar @dead, 300, '300 pids of no process');
my $t = time - 3600;
for my $i (0 .. $#dead) {
    my $path = file_of($dead[$i]);
    open my $f, '>', $path or die "$path: $!";
    print $f $line;
    close $f;
    # the newest of them: the last restart's
    utime $t + $i, $t + $i, $path;
}
# a live worker's (this test's own pid) and a named worker's, both old
for my $path (file_of($$), "$dir/worker-w-named.state") {
    open my $f, '>', $path or die;
    print $f $line;
    close $f;
    utime $t - 60, $t - 60, $path;
}
is(scalar @{ state_files() }, 302, '302 files in state_dir');

# a check with nothing to claim: all but the newest of the gone are gone
($rc, $out) = once('');
is($rc, 0, 'the worker runs with 302 files beside it');
my %left = map { $_ => 1 } @{ state_files() };
my $newest = file_of($dead[-1]);
ok($left{$newest}, 'the newest file of a worker gone stays');
ok($left{ file_of($$) }, "a live worker's file stays");
ok($left{"$dir/worker-w-named.state"}, 'a file named otherwise stays');
# pids wrap round: on a busy machine the worker itself may have been given
# one of the planted pids, and its own file is no gone worker's
my ($wpid) = $out =~ /mt5credit-work\[(\d+)\]/;
$wpid //= 0;
my $own = grep { $_ == $wpid && file_of($_) ne $newest } @dead;
my @stayed = grep { file_of($_) ne $newest && $left{ file_of($_) }
                   && $_ != $wpid && !kill(0, $_) } @dead;
is(scalar @stayed, 0, "every other gone worker's file was removed")
    or diag "left: @stayed";
like($out, qr/removed ${\(299 - $own)} files of workers gone/,
     '... and the worker says so');

# claiming goes on, and the worker's own claim is now the newest
my @ids = map { $st->pay(login => 70001, amount => 100 * $_ + 7) } 1 .. 3;
$st->start_worker('', %fast);
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @ids }, 60),
   'a worker credits as before');
ok(Mt5Credit::Worker::wait_for(sub { !-e $newest }, 30),
   '... and once its own claim is the newest, the last gone file goes');
$st->stop_worker('');
is(join(' ', map { scalar @{ $st->deals_of($_) } } $first, @ids),
   '1 1 1 1', 'one deal each');
unlike($st->worker_log(''), qr/ERROR/, 'no ERROR in its log');

# ---- a gone worker's claim the database does not hold ------------------

my $sysid = (split ' ', $line)[0];
my $tl = (split ' ', $line)[1];
my $lost = file_of((dead_pids(1))[0]);
open my $f, '>', $lost or die;
printf $f "%-127s", "$sysid $tl 888888 1";
print $f "\n";
close $f;
utime $t, $t, $lost;
($rc, $out) = once('');
ok(-e $lost, 'a file whose claim the database lacks is not removed ...');
is($sb->sql1("SELECT count(*) FROM mt5credit.case "
             . "WHERE kind = 'database_rewound'"), 1,
   '... it is a rewind, with its case');
# realigned, it is the newest file: it goes once a later claim is kept
my $after = $st->pay(login => 70001, amount => 2345);
$st->start_worker('', %fast);
ok($st->wait_status($after, 'done', 30), 'the next credit is made');
$st->stop_worker('');
($rc, $out) = once('');
ok(!-e $lost, '... and only then, handled and older, does the file go');

# ---- a state_dir that cannot be used ends the worker at start -----------

my $pending = $st->pay(login => 70001, amount => 4321);
my $before = join ' ', @{ $st->credit($pending) }{qw(status attempts)};

($rc, $out) = once('w-missing', state_dir => $sb->dir . '/no/such/dir');
is($rc, 2, 'a missing state_dir: exit 2');
like($out, qr{state_dir \S+/no/such/dir: No such file or directory},
     '... saying which and why');

mkdir $sb->dir . '/ro-state';
chmod 0500, $sb->dir . '/ro-state';
SKIP: {
    skip 'root writes anywhere', 2 if $> == 0;
    ($rc, $out) = once('w-ro', state_dir => $sb->dir . '/ro-state');
    is($rc, 2, 'a state_dir it cannot write: exit 2');
    like($out, qr{state_dir \S+/ro-state: Permission denied},
         '... saying which and why');
}

$sb->write_file('state-file', "x\n");
($rc, $out) = once('w-file', state_dir => $sb->dir . '/state-file');
is($rc, 2, 'a state_dir that is a file: exit 2');
like($out, qr{state_dir \S+/state-file: not a directory}, '... saying so');

is(join(' ', @{ $st->credit($pending) }{qw(status attempts)}), $before,
   'none of them claimed or looked up anything');

done_testing;
