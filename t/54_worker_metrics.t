#!/usr/bin/perl
#
# The worker's own metrics (metrics_dir): a node-exporter textfile it
# writes after each round.  Impossible:
#   - an MT5 request missing from the histogram of its server and
#     endpoint, or buckets that are not cumulative
#   - a balance answer not counted under its retcode (a rejection is
#     another number than a success)
#   - the slot the worker holds, its credits' ends or its last round
#     hidden
#   - a half-written file (it is renamed into place), or a worker that
#     stops because its metrics cannot be written
#   - status's credit latency histogram falling (a credit counted twice,
#     or dropped as it ages), or its sum other than the credits' own times
#   - a restarted default-named worker (host:pid: an upgrade restarts
#     every one) leaving its old textfile behind, its stamp frozen, so
#     node-exporter serves it forever and the staleness alert pages for
#     a process that stopped as it should; or a start removing a file of
#     a live process, of another host, or of a name given in the
#     configuration

use strict;
use warnings;

use File::Path qw(make_path);
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 71001);

my @credits = map { $st->pay(login => 71001, amount => 1000 + $_) } 1 .. 3;
# the second balance call is refused for want of money: a final rejection
$sim->fault(kind => 'retcode', endpoint => '/api/trade/balance',
            retcode => '10019 Not enough money', count => 1);

my $dir = $sb->dir . '/textfile';
make_path($dir);
my $conf = $st->worker_config('metrics1', metrics_dir => $dir);
my $t0 = time;
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($rc, 0, 'a worker round with metrics_dir') or diag $out;
my @status = map { $st->status_of($_) } @credits;
is(join(' ', sort @status), 'done done failed',
   'two credits made, one refused by MT5');

my $file = "$dir/mt5credit-work-metrics1.prom";
ok(-f $file, 'mt5credit-work-<worker_name>.prom written');
is(scalar(() = glob("$dir/*.tmp.*")), 0, '... through a file renamed into place');
my $m = do { local $/; open my $f, '<', $file or die; <$f> };

# every sample carries worker="metrics1" first (two workers of a host
# write two files, never the same series): checked below, then read past
sub v {
    my ($sample) = @_;
    $sample =~ s/^(\w+)\{/$1\{worker="metrics1",/
        or $sample =~ s/^(\w+)$/$1\{worker="metrics1"\}/;
    return $m =~ /^\Q$sample\E ([\d.]+)$/m ? $1 : undef;
}

is(scalar(grep { !/^#/ && !/^\w+\{worker="metrics1"[,}]/ }
          split /\n/, $m), 0,
   'every sample names its worker (worker="metrics1"), first of its labels');

my $ep = 'server="live1",endpoint="/api/trade/balance"';
like($m, qr/^# TYPE mt5credit_worker_mt5_request_duration_seconds histogram$/m,
     'the MT5 request histogram');
is(v("mt5credit_worker_mt5_request_duration_seconds_count{$ep}"), 3,
   '... three balance calls on live1');
my @b = $m =~ /^mt5credit_worker_mt5_request_duration_seconds_bucket\{worker="metrics1",\Q$ep\E,le="[^"]+"\} (\d+)$/mg;
is(scalar @b, 12, '... in 12 buckets');
is_deeply([ @b ], [ sort { $a <=> $b } @b ], '... cumulative');
is($b[-1], 3, '... +Inf holds them all');
ok(defined v("mt5credit_worker_mt5_request_duration_seconds_sum{$ep}"),
   '... with a _sum');
like($m, qr/^mt5credit_worker_mt5_request_duration_seconds_count\{worker="metrics1",server="live1",endpoint="\/api\/user\/get"\} \d+$/m,
     'the other endpoints too (user/get)');
is(v("mt5credit_worker_mt5_requests_total{$ep,outcome=\"ok\"}"), 2,
   'requests by outcome: 2 ok');
is(v("mt5credit_worker_mt5_requests_total{$ep,outcome=\"rejected\"}"), 1,
   '... 1 rejected');
is(v('mt5credit_worker_balance_answers_total{server="live1",retcode="0"}'), 2,
   'balance answers by retcode: 0 twice');
is(v('mt5credit_worker_balance_answers_total{server="live1",retcode="10019"}'),
   1, '... 10019 once');
cmp_ok(v('mt5credit_worker_session_slot{server="live1"}') // 0, '>=', 1,
       'the session slot it holds');
is(v('mt5credit_worker_credits_total{outcome="done"}'), 2, 'credits done: 2');
is(v('mt5credit_worker_credits_total{outcome="failed"}'), 1, 'failed: 1');
my $last = v('mt5credit_worker_last_round_timestamp_seconds');
ok($last && $last >= $t0 && $last <= time + 1,
   'the last round\'s time, just now');
unlike($m, qr/_503_|\{status=/, 'no status code or status in a metric name');

# --- how long credits take, in status: counted once, never falling ------------

sub status_prom {
    my ($src, $o) = Mt5Credit::Worker::run($sb, 'status', '--database',
        'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker',
        '--prometheus');
    die "status: $o" if $src;
    return $o;
}

sub latency {
    my ($text) = @_;
    my @b = $text =~ /^mt5credit_credit_latency_seconds_bucket\{le="[^"]+"\} (\d+)$/mg;
    my ($n) = $text =~ /^mt5credit_credit_latency_seconds_count (\d+)$/m;
    my ($sum) = $text =~ /^mt5credit_credit_latency_seconds_sum (\S+)$/m;
    my ($done) = $text =~ /^mt5credit_credits_done_total\{kind="deposit"\} (\d+)$/m;
    return { buckets => \@b, count => $n, sum => $sum, done => $done };
}

my $l1 = latency(status_prom());
is($l1->{count}, 2, 'status: the two credits done are in the latency histogram');
is($l1->{done}, 2, '... and mt5credit_credits_done_total{kind="deposit"} is 2');
is(scalar @{ $l1->{buckets} }, 12, '... 12 buckets');
is_deeply($l1->{buckets}, [ sort { $a <=> $b } @{ $l1->{buckets} } ],
          '... cumulative');
my $want_sum = $sb->sql1("SELECT sum(round(extract(epoch FROM updated_at - "
                         . "created_at) * 1000)) / 1000 FROM mt5credit.mt5_credit "
                         . "WHERE status = 'done'");
cmp_ok(abs($l1->{sum} - $want_sum), '<', 0.0015,
       "... its sum each credit's own time ($want_sum s)");
like(status_prom(), qr/^# TYPE mt5credit_credits_done_total counter$/m,
     '... a counter');

# the credits age past an hour (021 counted only the last hour's, so they
# fell out and the counter went down); a write that is not to done again
$sb->psql("UPDATE mt5credit.mt5_credit SET created_at = created_at - "
          . "interval '2 hours'");
my $l2 = latency(status_prom());
is($l2->{count}, 2, 'credits two hours old are still counted: it never falls');
is_deeply($l2->{buckets}, $l1->{buckets}, '... the buckets as they were');

# a third credit: counted once, the others not again
my $c4 = $st->pay(login => 71001, amount => 4444);
($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($st->status_of($c4), 'done', 'a further credit made');
my $l3 = latency(status_prom());
is($l3->{count}, 3, '... counted once: 3');
is($l3->{done}, 3, '... done_total 3');
ok(!grep({ $l3->{buckets}[$_] < $l1->{buckets}[$_] } 0 .. 11),
   '... no bucket went down');

# 050's count of the credits done before it: run again on emptied counters,
# it finds the same as the trigger did
my ($seed) = do { local $/; open my $f, '<', 'sql/050_credit_latency_counters.sql'
                      or die $!; <$f> }
    =~ /^(INSERT INTO mt5credit\.credit_latency .*?;)$/ms;
ok($seed, '050 counts the credits done before it');
# (created_at was aged above, so the seed's times are the rows' times now)
$sb->psql("DELETE FROM mt5credit.credit_latency");
$sb->psql($seed);
is($sb->sql1("SELECT sum(n) FROM mt5credit.credit_latency"), 3,
   '... each done credit once');
is($sb->sql1("SELECT sum(sum_ms) FROM mt5credit.credit_latency"),
   $sb->sql1("SELECT sum(greatest(0, round(extract(epoch FROM updated_at - "
             . "created_at) * 1000))) FROM mt5credit.mt5_credit WHERE status = 'done'"),
   '... with each one\'s time');

# a directory it cannot write: the worker goes on, and says so
my $bad = $st->worker_config('metrics2', metrics_dir => $sb->dir . '/nowhere');
($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $bad, '--once');
is($rc, 0, 'a metrics_dir that does not exist: the round still runs');
like($out, qr/WARN metrics: .*nowhere.*No such file/, '... and the log says why');

# under a unit's UMask=0077 the collector (another user) still reads it
{
    my $old = umask 077;
    my $c2 = $st->worker_config('metrics2', metrics_dir => $dir);
    my ($rc2, $out2) = Mt5Credit::Worker::run($sb, 'work', '-c', $c2,
                                              '--once');
    umask $old;
    is($rc2, 0, 'a worker round under umask 077') or diag $out2;
    is(sprintf('%04o', (stat "$dir/mt5credit-work-metrics2.prom")[2] & 07777),
       '0644', '... still writes its textfile 0644, for node-exporter');
}

# default-named workers (host:pid): a clean stop takes its file along,
# a start removes those of this host's processes that are gone
{
    use Sys::Hostname qw(hostname);
    (my $host = hostname()) =~ s/[^A-Za-z0-9_.-]/_/g;
    my $dead = 4194000;
    $dead++ while kill(0, $dead) || $!{EPERM};
    my %planted = (
        gone    => "$dir/mt5credit-work-${host}_$dead.prom",
        live    => "$dir/mt5credit-work-${host}_$$.prom",
        other   => "$dir/mt5credit-work-otherhost_$dead.prom",
        payout  => "$dir/mt5credit-payout-${host}_$dead.prom",
    );
    for (values %planted) {
        open my $f, '>', $_ or die "$_: $!";
        print $f "mt5credit_worker_last_round_timestamp_seconds 1\n";
        close $f;
    }
    my $c3 = $st->worker_config('', metrics_dir => $dir);
    my $pay = $st->pay(login => 71001, amount => 1234);
    my ($rc3, $out3) = Mt5Credit::Worker::run($sb, 'work', '-c', $c3,
                                              '--once');
    is($rc3, 0, 'a default-named worker round') or diag $out3;
    ok(!-e $planted{gone}, 'its start removed the file of this host\'s '
       . "worker $dead, whose process is gone");
    like($out3, qr/INFO metrics: \S+_$dead\.prom removed: its process $dead is gone/,
         '... and said so');
    ok(-e $planted{live} && -e $planted{other} && -e $planted{payout},
       '... not a live process\'s, another host\'s, nor another program\'s');
    ok(-e $file, '... nor a named worker\'s');
    is(scalar(grep { !/_$$\.prom$/ }
              glob("$dir/mt5credit-work-${host}_*.prom")), 0,
       'its own file went with it when it stopped (its name never comes '
       . 'back)');
    like($out3, qr/credit=$pay .*done/, '... after a round that wrote it');
}

done_testing;
