#!/usr/bin/perl
#
# What a platform team expects of a command line and of a running edge:
# it says which version and commit it is, help goes to stdout with exit
# 0, a usage error goes to stderr with exit 2.  This makes impossible:
#   - a binary that cannot say which source it was built from (mt5credit
#     --version / -V, the edge's start line, both status pages)
#   - a help that a pager or grep cannot read (on stderr), or that exits
#     non-zero, for the program or any of its commands
#   - a typo'd option or a stray operand being ignored, or answered on
#     stdout, or with any status but 2
#   - the edge logging its version never, or more than once at a start

use strict;
use warnings;

use Test::More;

use Mt5Credit::Sandbox;
use Mt5Credit::Worker;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $BIN = $Mt5Credit::Worker::BIN;

my @COMMANDS = qw(work resolve status reconcile poll-provider payout cases
                  risk withdrawals events persons send-test-webhook audit);

# its exit status, stdout and stderr
sub cli {
    my (@args) = @_;
    my $dir = File::Temp::tempdir(CLEANUP => 1);
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDIN, '<', '/dev/null' or POSIX::_exit(127);
        open STDOUT, '>', "$dir/out" or POSIX::_exit(127);
        open STDERR, '>', "$dir/err" or POSIX::_exit(127);
        exec { $BIN } $BIN, @args or POSIX::_exit(127);
    }
    waitpid $pid, 0;
    my $rc = $? >> 8;
    my %o = map { open my $fh, '<', "$dir/$_" or die; local $/;
                  ($_ => <$fh> // '') } qw(out err);
    return ($rc, $o{out}, $o{err});
}

# --- what it is built from --------------------------------------------------

my ($version, $commit) = do {
    open my $fh, '<', "$ROOT/build/build-id" or die "build/build-id: $!";
    split ' ', scalar <$fh>;
};
my $file_version = do {
    open my $fh, '<', "$ROOT/VERSION" or die "VERSION: $!";
    my $v = <$fh>;
    chomp $v;
    $v;
};

is($version, $file_version, "the build's version is VERSION ($version)");
like($commit, qr/^(?:[0-9a-f]{12}(?:-dirty)?|unknown)$/,
     "the build's commit is a commit ($commit)");

# where git can be asked here (the tester may not own the tree)
my $head = `git -c safe.directory='*' -C '$ROOT' rev-parse --short=12 HEAD 2>/dev/null`;
chomp $head;
SKIP: {
    skip 'no git history here', 1 unless $head =~ /^[0-9a-f]{12}$/;
    like($commit, qr/^\Q$head\E(?:-dirty)?$/, 'it is the checked-out HEAD');
}

for my $flag ('--version', '-V') {
    my ($rc, $out, $err) = cli($flag);
    is($rc, 0, "mt5credit $flag exits 0");
    like($out, qr/^mt5credit \Q$version\E \(commit \Q$commit\E\)$/m,
         '... names the version and commit, on stdout');
    like($out, qr/^libraries: libpq \d+\.\d+, hiredis \d+\.\d+\.\d+, libcurl/m,
         '... and the libraries it runs with');
    is($err, '', '... and nothing on stderr');
}

# --- help: stdout, exit 0 ----------------------------------------------------

{
    my ($rc, $out, $err) = cli('--help');
    is($rc, 0, 'mt5credit --help exits 0');
    is($err, '', '... with nothing on stderr');
    for my $cmd (@COMMANDS) {
        like($out, qr/^  \Q$cmd\E\s/m, "... and lists $cmd");
    }
}

for my $cmd (@COMMANDS) {
    my ($rc, $out, $err) = cli($cmd, '--help');
    is($rc, 0, "mt5credit $cmd --help exits 0");
    like($out, qr/^usage: mt5credit \Q$cmd\E /, '... its own usage, on stdout');
    is($err, '', '... nothing on stderr');
}

{
    my ($rc, $out, $err) = cli('work', '--help');
    like($out, qr/--config.*--once/s, 'work --help lists its options');
    like($out, qr/password_file.*ca_file.*tls_verify.*sessions/s,
         '... and the configuration keys it reads');
    ($rc, $out) = cli('status', '--help');
    like($out, qr/--database.*--prometheus/s, 'status --help lists its own');
    ($rc, $out) = cli('cases', 'list', '--help');
    is($rc, 0, 'cases list --help exits 0');
    like($out, qr/^usage: mt5credit cases/, '... with the desk\'s usage');
}

# --- usage errors: stderr, exit 2, nothing on stdout ---------------------------

my @errors = (
    [ 'no command',          [] ],
    [ 'an unknown command',  [ 'wrok' ] ],
    (map { [ "$_ with an unknown option", [ $_, '--no-such-option' ] ] }
         @COMMANDS),
    [ 'work with a stray operand',  [ 'work', 'now' ] ],
    [ 'payout with a stray operand', [ 'payout', '--once', 'x' ] ],
    [ 'reconcile without its inputs', [ 'reconcile', '--day', '2026-11-30' ] ],
    [ 'cases with no action',  [ 'cases' ] ],
    [ 'cases with an unknown action',  [ 'cases', 'delete', '1' ] ],
);

for my $e (@errors) {
    my ($what, $args) = @$e;
    my ($rc, $out, $err) = cli(@$args);
    is($rc, 2, "$what: exit 2");
    is($out, '', '... nothing on stdout');
    like($err, qr/\S/, '... and the reason on stderr');
}

{
    my ($rc, $out, $err) = cli('work', '--no-such-option');
    like($err, qr/^mt5credit work: .*no-such-option/m,
         'an unknown option is named with its command');
    like($err, qr/Try "mt5credit work --help"/, '... and where to look');
    ($rc, $out, $err) = cli('work', 'now');
    like($err, qr/unexpected argument "now"/, 'a stray operand is named');
}

# --- status and the edge say which build answers --------------------------------

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

my $build_info = qr/^mt5credit_build_info\{version="\Q$version\E",commit="\Q$commit\E"\} 1$/m;

{
    my $db = 'host=127.0.0.1 port=' . $sb->pg_port
           . ' dbname=mt5credit user=worker';
    my ($rc, $out, $err) = cli('status', '--database', $db, '--prometheus');
    is($rc, 0, 'mt5credit status --prometheus') or diag($err);
    like($out, $build_info, '... reports mt5credit_build_info');
    like($out, qr/^# TYPE mt5credit_build_info gauge$/m, '... as a gauge');

    ($rc, $out, $err) = cli('status', '--database', $db);
    like($out, qr/^mt5credit \Q$version\E \(commit \Q$commit\E\)$/m,
         'mt5credit status names the version and commit');
}

my $http = <<'HTTP';
    mt5_credit_postgres "%%PG%%";
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /status { mt5_credit_status; }
    }
HTTP

$sb->start_nginx($http);

{
    my $res = $sb->http('GET', '/status');
    is($res->{status}, 200, 'the edge\'s status page answers');
    like($res->{body}, $build_info, '... with mt5credit_build_info');

    my @start = $sb->error_log =~ /(\[notice\] .*mt5_credit module .*)/g;
    is(scalar @start, 1, 'the edge logs its version once at start');
    like($start[0] // '',
         qr/mt5_credit module \Q$version\E \(commit \Q$commit\E\), libpq \d+\.\d+, hiredis \d+\.\d+\.\d+, OpenSSL /,
         '... with its commit and libraries, as nginx -V would');

    $sb->reload_nginx;
    @start = $sb->error_log =~ /(mt5_credit module \Q$version\E)/g;
    is(scalar @start, 2, '... and once more for a reload, its new start');
}

done_testing();
