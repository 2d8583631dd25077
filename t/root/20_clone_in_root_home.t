#!/usr/bin/perl
#
# Root's natural place for a clone is its home, /root, mode 0700 on
# Debian: the unprivileged tester that runs the tests and the demo cannot
# read it.  This makes impossible:
#   - "make test" or "make demo" from such a clone dying at its first
#     step (the tree's path unresolvable, "/sql/migrate" not found): the
#     command runs in a readable copy of the tree instead
#   - the copy changing what the command sees (it runs in the same
#     subdirectory, with the same files) or its exit status
#   - the clone's own permissions being loosened, or the copy left behind

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use Test::More;

my $ROOT = abs_path(dirname(__FILE__) . '/../..');

plan skip_all => 'the tester exists only for root' if $> != 0;

my $home = tempdir(CLEANUP => 1);
chmod 0700, $home or die;
my $clone = "$home/mt5-credit";
system('git', 'clone', '-q', '--no-local', $ROOT, $clone) == 0
    or BAIL_OUT('git clone failed');

my $tmp = tempdir(CLEANUP => 1);
chmod 0755, $tmp;
local $ENV{TMPDIR} = $tmp;

sub run_in {
    my ($dir, @cmd) = @_;
    my $out = `cd '$dir' && '$clone/t/run-as-tester' @cmd 2>&1`;
    return ($? >> 8, $out);
}

is(system("runuser -u mt5credit-test -- test -r $clone/Makefile "
          . '2>/dev/null') >> 8, 1,
   'the tester cannot read the clone') if getpwnam('mt5credit-test');

my ($rc, $out) = run_in($clone, 'prove', '-I', 't/lib',
                        't/05_self_contained.t');
is($rc, 0, 'a test from a clone the tester cannot read passes') or diag($out);
like($out, qr/running in a copy/, '... run in a copy, and it says so');
like($out, qr/^Result: PASS$/m, '... the test really ran');

($rc, $out) = run_in($clone, 'perl', '-e', "'exit 3'");
is($rc, 3, 'the command\'s exit status comes back');

($rc, $out) = run_in("$clone/t", 'sh', '-c', "'pwd; ls -d lib'");
like($out, qr{/tree/t$}m, 'it runs in the same subdirectory of the copy');
like($out, qr/^lib$/m, '... with the same files');

is(sprintf('%o', (stat $home)[2] & 07777), '700',
   'the clone\'s directory keeps its mode');
opendir my $dh, $tmp or die;
is(scalar(grep { /^mt5credit-tree\./ } readdir $dh), 0,
   'no copy is left behind');

done_testing();
