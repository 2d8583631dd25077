#!/usr/bin/perl
#
# "make deb-check": the packages installed on this machine with dpkg -i,
# used, removed, purged; the whole cycle a platform team's hosts go
# through.  Impossible:
#   - the module not enabled by installing it, or enabled but not loading
#     into the packaged nginx (its directives unknown)
#   - the system user missing, or the configuration readable by everyone
#     or not its group's; an upgrade (the same package again) undoing it,
#     or overwriting an administrator's edit of the configuration
#   - a unit enabled or started by the install
#   - a removal leaving the module enabled (nginx then fails to start:
#     its .so is gone) or the configuration gone (a conffile stays until
#     purge)
#   - nginx not loadable after the removal or the purge
#   - a purge leaving anything behind: a file, a link in modules-enabled,
#     a statoverride, systemd state; except what is documented: the
#     system user (Debian never removes them) and a /var/lib/mt5credit
#     that holds a worker's last claim (evidence, docs/runbook.md)
#
# Run by t/run-tests as the user who started it (root in CI), and by
# "make deb-check".  Without root or passwordless sudo it is skipped, and
# under CI=true that is a failure.  It refuses to run where either
# package is already installed: it would remove someone's installation.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use Test::More;

use lib dirname(__FILE__) . '/../lib';
use Mt5Credit::Command qw(run_as_root as_root installed);

my $ROOT = abs_path(dirname(__FILE__) . '/../..');
my @PKGS = qw(libnginx-mod-http-mt5-credit mt5credit);
my $ENABLED = '/etc/nginx/modules-enabled/50-mod-http-mt5-credit.conf';
my $AVAILABLE = '/usr/share/nginx/modules-available/mod-http-mt5-credit.conf';
my $SO = '/usr/lib/nginx/modules/ngx_mt5_credit_module.so';
my $CONF = '/etc/mt5credit/mt5credit.conf';

my $is_root = $> == 0;
my $has_sudo = !$is_root && system('sudo -n true >/dev/null 2>&1') == 0;

if (!$is_root && !$has_sudo) {
    if ($ENV{CI}) {
        fail('the package cycle is tested: CI runs as root or with '
             . 'passwordless sudo');
        done_testing();
        exit 1;
    }
    plan skip_all => 'needs root or passwordless sudo';
}

sub dpkg_known {
    my ($pkg) = @_;
    return `dpkg-query -W -f='\${Status}' $pkg 2>/dev/null` ne '';
}

for my $p (@PKGS) {
    BAIL_OUT("$p is installed on this machine: this test installs and "
             . "purges it, and would remove that installation") if installed($p);
}

# built as whoever runs this (root only installs)
my $out = `make -s -C $ROOT deb 2>&1`;
my $rc = $? >> 8;
is($rc, 0, 'make deb') or diag $out;
chomp(my $version = `cat $ROOT/VERSION`);
chomp(my $arch = `dpkg --print-architecture`);
my @debs = map { "$ROOT/build/deb/${_}_${version}_$arch.deb" } @PKGS;
ok(-f $_, "built: $_") for @debs;

my $user_before = defined getpwnam('mt5credit');
my $tmp = tempdir('mt5credit-debcheck-XXXXXX', TMPDIR => 1, CLEANUP => 1);
chmod 0755, $tmp;

# whatever happens: nothing of ours stays installed
END {
    my @left = grep { dpkg_known($_) } @PKGS;
    system(as_root('dpkg', '--purge', @left)) if @left;
    if (defined getpwnam('mt5credit') && !$user_before) {
        system(as_root('userdel', 'mt5credit'));
    }
    system(as_root('rm', '-rf', '/var/lib/mt5credit'))
        if -d '/var/lib/mt5credit' && !$user_before;
}

# what is on the machine, to compare with after the purge: every path
# (type, mode, owner) under the directories packages write, but the
# package manager's own records and caches
my @WATCH = qw(/etc /usr /lib /var/lib /opt);
my $PRUNE = '/var/lib/dpkg /var/lib/apt /var/cache /var/lib/ucf /usr/share/man'
          . ' /var/lib/systemd/timers';
sub snapshot {
    my $prune = join ' -o ', map { "-path $_" } split ' ', $PRUNE;
    my $list = `find @WATCH -xdev \\( $prune \\) -prune -o -printf '%y %m %u:%g %p\\n' 2>/dev/null | sort`;
    return $list;
}

# nginx makes its own temporary directories (/var/lib/nginx/body, ...)
# the first time it reads its configuration.  On a fresh machine that is
# the nginx -t below: they are nginx's, so they are made before the
# snapshot and not counted as left behind by these packages
($rc, $out) = run_as_root('/usr/sbin/nginx', '-t');
is($rc, 0, "nginx -t before the install: the machine's own configuration")
    or diag $out;

my $before = snapshot();
ok(length $before > 1000, 'a snapshot of the machine before the install');

# --- dpkg -i ------------------------------------------------------------------

($rc, $out) = run_as_root('env', 'DEBIAN_FRONTEND=noninteractive', 'dpkg',
                          '-i', @debs);
is($rc, 0, 'dpkg -i both packages') or diag $out;
ok(installed($_), "$_ installed") for @PKGS;

# the module, enabled as Debian's own are
ok(-l $ENABLED, "the module enabled: $ENABLED");
is(readlink($ENABLED) // '', $AVAILABLE, "... linked to $AVAILABLE");
ok(-f $SO, "... its .so in nginx's modules directory");

($rc, $out) = run_as_root('/usr/sbin/nginx', '-t');
is($rc, 0, "nginx -t: this machine's nginx loads it") or diag $out;
($rc, $out) = run_as_root('/usr/sbin/nginx', '-T');
like($out, qr{^load_module modules/ngx_mt5_credit_module\.so;}m,
     '... through modules-enabled (nginx -T)');

# its directives known through the enabled link: the packaged example
{
    mkdir "$tmp/$_" for qw(etc logs);
    open my $s, '>', "$tmp/etc/stripe.secret" or die;
    print $s "whsec_debcheck\n";
    close $s;
    my $edge = `cat /usr/share/doc/libnginx-mod-http-mt5-credit/examples/mt5credit-edge.conf`;
    $edge =~ s{/etc/mt5credit}{$tmp/etc}g;
    $edge =~ s{127\.0\.0\.1:8081}{127.0.0.1:1};
    for my $load ('include /etc/nginx/modules-enabled/*.conf;', '') {
        open my $f, '>', "$tmp/nginx.conf" or die;
        print $f <<"CONF";
$load
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log;
events { worker_connections 16; }
http {
    access_log off;
    client_body_temp_path $tmp/body;
$edge
}
CONF
        close $f;
        # nginx's own prefix: modules-available names modules/...
        ($rc, $out) = run_as_root('/usr/sbin/nginx', '-t', '-c',
                                  "$tmp/nginx.conf",
                                  '-e', "$tmp/logs/error.log");
        if ($load) {
            is($rc, 0, 'the packaged edge example passes nginx -t with '
               . 'modules-enabled/*.conf') or diag $out;
        } else {
            like($out, qr/unknown directive "mt5_credit_postgres"/,
                 '... and fails without it: the link is what loads it');
        }
    }
}

# the user and the configuration
my @pw = getpwnam('mt5credit');
ok(@pw, 'the system user mt5credit exists (sysusers)');
cmp_ok($pw[2] // 65534, '<', 1000, '... a system uid');
is($pw[7] // '', '/var/lib/mt5credit', '... home /var/lib/mt5credit');
like($pw[8] // '', qr{/nologin$}, '... no login shell');

sub stat_of {
    my ($path) = @_;
    my @st = stat $path or return '';
    return sprintf('%04o %s:%s', $st[2] & 07777, scalar getpwuid($st[4]),
                   scalar getgrgid($st[5]));
}
is(stat_of($CONF), '0640 root:mt5credit',
   "$CONF: 0640, group mt5credit");
($rc, $out) = run_as_root('dpkg-statoverride', '--list', $CONF);
is($out, "root mt5credit 640 $CONF\n", '... held by a statoverride');

($rc, $out) = run_as_root('/usr/bin/mt5credit', '--version');
is($rc, 0, '/usr/bin/mt5credit runs') or diag $out;
like($out, qr/\Q$version\E/, '... this version');
($rc, $out) = run_as_root('man', '-w', 'mt5credit');
like($out, qr{/usr/share/man/man1/mt5credit\.1\.gz}, 'man mt5credit finds its page');

# not enabled, not started
my @wants = glob('/etc/systemd/system/*.wants/mt5credit-*');
is_deeply(\@wants, [], 'no unit enabled by the install');
($rc, $out) = run_as_root('pgrep', '-u', 'mt5credit');
isnt($rc, 0, '... nothing running as mt5credit');

# --- the same packages again: an upgrade keeps what is set ------------------------

{
    open my $f, '>>', $CONF or die "$CONF: $!";
    print $f "# an administrator's edit\n";
    close $f;
    ($rc, $out) = run_as_root('env', 'DEBIAN_FRONTEND=noninteractive',
                              'dpkg', '-i', @debs);
    is($rc, 0, 'dpkg -i again (a reinstall, as an upgrade runs)') or diag $out;
    like(`cat $CONF`, qr/an administrator's edit/,
         "... keeps the administrator's edit of the conffile");
    is(stat_of($CONF), '0640 root:mt5credit', '... and its mode and group');
    ($rc, $out) = run_as_root('dpkg-statoverride', '--list');
    is(scalar(() = $out =~ /\Q$CONF\E/g), 1, '... with one statoverride');
    ok(-l $ENABLED, '... and the module still enabled');
}

# a worker's last claim, as a running worker would leave it
run_as_root('install', '-d', '-o', 'mt5credit', '-g', 'mt5credit', '-m',
            '0750', '/var/lib/mt5credit');
run_as_root('sh', '-c', 'echo claim > /var/lib/mt5credit/worker-host1.state');
# a template timer's instance, enabled as "systemctl enable
# mt5credit-reconcile@stripe.timer" links it
my $wants = '/etc/systemd/system/timers.target.wants';
my $made_wants = !-d $wants;
run_as_root('install', '-d', $wants);
run_as_root('ln', '-sf', '/lib/systemd/system/mt5credit-reconcile@.timer',
    "$wants/mt5credit-reconcile\@stripe.timer");

# --- remove ---------------------------------------------------------------------

($rc, $out) = run_as_root('dpkg', '--remove', @PKGS);
is($rc, 0, 'dpkg --remove both') or diag $out;
ok(!-e $SO, 'the .so is gone');
ok(!-e $ENABLED && !-l $ENABLED, '... and no longer enabled');
ok(-l "$ENABLED.removed", "... its link set aside ($ENABLED.removed), as "
   . "Debian's modules do");
($rc, $out) = run_as_root('/usr/sbin/nginx', '-t');
is($rc, 0, 'nginx -t after the removal: nginx still loads') or diag $out;
ok(-f $CONF, 'the conffile stays until purge');

# --- purge ------------------------------------------------------------------------

($rc, $out) = run_as_root('dpkg', '--purge', @PKGS);
is($rc, 0, 'dpkg --purge both') or diag $out;
ok(!dpkg_known($_), "$_ gone from dpkg's database") for @PKGS;
ok(!-l "$ENABLED.removed", 'the set-aside link is gone');
ok(!-e '/etc/mt5credit', '/etc/mt5credit is gone');
($rc, $out) = run_as_root('dpkg-statoverride', '--list');
unlike($out, qr/mt5credit/, '... and its statoverride');
($rc, $out) = run_as_root('/usr/sbin/nginx', '-t');
is($rc, 0, 'nginx -t after the purge') or diag $out;

ok(-f '/var/lib/mt5credit/worker-host1.state',
   "a worker's last claim is kept (evidence; docs/runbook.md)");
ok(defined getpwnam('mt5credit'), 'the system user stays, as Debian\'s do');
ok(!-l "$wants/mt5credit-reconcile\@stripe.timer",
   "an enabled template timer's link does not dangle after the purge");
run_as_root('rmdir', $wants) if $made_wants;

# what the test itself left: the state file and, if it made it, the user
run_as_root('rm', '-rf', '/var/lib/mt5credit');

my $after = snapshot();
my %b = map { $_ => 1 } split /\n/, $before;
my %a = map { $_ => 1 } split /\n/, $after;
my @added = grep { !$b{$_} } sort keys %a;
my @removed = grep { !$a{$_} } sort keys %b;
is_deeply(\@added, [], 'nothing left behind: no path the install made is '
          . 'still there') or diag explain \@added;
is_deeply(\@removed, [], '... and nothing that was there before is gone')
    or diag explain \@removed;

done_testing();
