#!/usr/bin/perl
#
# `make install`, as a platform team runs it: staged with DESTDIR, then
# the installed pieces used as installed.  Impossible:
#   - an installation missing the binary, the module, a migration, the
#     docs, an example or a unit
#   - the installed nginx snippet failing `nginx -t` with the installed
#     module, or a typo in it passing unnamed (file and line)
#   - a systemd unit that systemd-analyze verify warns about
#   - installed migrations that do not build the schema on an empty
#     database
#   - the installed binary not running

use strict;
use warnings;

use File::Path qw(make_path);
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
my $dir = $sb->dir;
my $stage = "$dir/stage";

sub sh {
    my ($cmd) = @_;
    my $out = `$cmd 2>&1`;
    return ($? >> 8, $out);
}

# --- staged with DESTDIR --------------------------------------------------------

my ($rc, $out) = sh("make -s install DESTDIR=$stage");
is($rc, 0, 'make install DESTDIR=... succeeds') or diag $out;

my $modules = `/usr/sbin/nginx -V 2>&1` =~ /--modules-path=(\S+)/ ? $1
                                                                  : '';
ok($modules, "nginx's modules directory: $modules");
ok(-f "$stage$modules/ngx_mt5_credit_module.so",
   'the module, where the packaged nginx loads modules from');
ok(-x "$stage/usr/local/bin/mt5credit", 'mt5credit in bin');
my @sql = glob("$stage/usr/local/share/mt5credit/sql/[0-9][0-9][0-9]_*.sql");
ok(-f "$stage/usr/local/share/mt5credit/sql/structure.sql",
   'the schema as one document (structure.sql)');
is(scalar @sql, scalar(my @src = glob('sql/[0-9][0-9][0-9]_*.sql')),
   'every migration (' . scalar(@sql) . ')');
ok(-x "$stage/usr/local/share/mt5credit/sql/migrate", '... and migrate');
ok(-f "$stage/usr/local/share/doc/mt5credit/runbook.md", 'the docs');
for my $f (qw(mt5credit.conf mt5credit-edge.conf mt5credit-console.conf
               mod-mt5-credit.conf)) {
    ok(-f "$stage/usr/local/share/mt5credit/examples/$f", "example $f");
}
ok(-f "$stage/usr/local/share/mt5credit/console/index.html"
   && -f "$stage/usr/local/share/mt5credit/console/console.js",
   'the console\'s pages');
like(`cat $stage/usr/local/share/mt5credit/examples/mt5credit-console.conf`,
     qr{alias /usr/local/share/mt5credit/console/;},
     '... which its example serves');
ok(-f "$stage/usr/local/share/doc/mt5credit/examples/mt5credit-alerts.yml",
   'the alert rules');
ok(-f "$stage/usr/local/share/mt5credit/monitoring/mt5credit-alerts.yml"
   && -f "$stage/usr/local/share/mt5credit/monitoring/mt5credit-dashboard.json",
   '... and under share/mt5credit/monitoring, which minimal images keep');
my @units = map { s{.*/}{}r }
            glob("$stage/usr/local/lib/systemd/system/mt5credit-*");
is_deeply([ sort @units ],
          [ sort qw(mt5credit-worker.service mt5credit-payout.service
                    mt5credit-outbound.service
                    mt5credit-poll-provider.service
                    mt5credit-reconcile@.service mt5credit-reconcile@.timer
                    mt5credit-backfill@.service mt5credit-backfill@.timer
                    mt5credit-audit-seal.service mt5credit-audit-seal.timer
                    mt5credit-status-textfile.service
                    mt5credit-status-textfile.timer
                        mt5credit-unit-failed@.service) ],
          'the systemd units');
unlike(join('', map { local $/; open my $f, '<', $_ or die; <$f> }
                glob("$stage/usr/local/lib/systemd/system/*")),
       qr/@[A-Z]+@/, '... rendered: no placeholder left');

($rc, $out) = sh("$stage/usr/local/bin/mt5credit --help");
is($rc, 0, 'the installed mt5credit runs');
like($out, qr/payout/, '... and knows its commands');

# --- nginx -t with the installed snippet ----------------------------------------

{
    make_path("$dir/etc/mt5credit", "$dir/logs");
    $sb->write_file('etc/mt5credit/stripe.secret', "whsec_install_test\n");
    my $port = Mt5Credit::Sandbox::free_port();
    my $load = `cat $stage/usr/local/share/mt5credit/examples/mod-mt5-credit.conf`;
    $load =~ s{\Q$modules\E}{$stage$modules};
    my $edge = `cat $stage/usr/local/share/mt5credit/examples/mt5credit-edge.conf`;
    $edge =~ s{/etc/mt5credit}{$dir/etc/mt5credit}g;
    $edge =~ s{127\.0\.0\.1:8081}{127.0.0.1:$port};
    $sb->write_file('conf.d/mt5credit-edge.conf', $edge);
    my $temp = Mt5Credit::Sandbox::nginx_temp_paths($dir);
    my $main = <<"CONF";
$load
pid $dir/nginx-install.pid;
error_log $dir/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
$temp
    include $dir/conf.d/*.conf;
}
CONF
    $sb->write_file('nginx-install.conf', $main);
    make_path("$dir/body");
    my $t = "/usr/sbin/nginx -t -p $dir/ -c $dir/nginx-install.conf "
          . "-e $dir/logs/error.log";
    ($rc, $out) = sh($t);
    is($rc, 0, 'nginx -t with the installed module and snippet') or diag $out;
    like($out, qr/test is successful/, '... says the test is successful');

    (my $typo = $edge) =~ s/mt5_credit_signature stripe/mt5_credit_signatur stripe/;
    $sb->write_file('conf.d/mt5credit-edge.conf', $typo);
    ($rc, $out) = sh($t);
    isnt($rc, 0, 'a typo in the snippet fails nginx -t');
    like($out, qr/unknown directive "mt5_credit_signatur" in \S*mt5credit-edge\.conf:\d+/,
         '... naming the directive, the file and the line');
}

# --- systemd units, with real paths -------------------------------------------

SKIP: {
    skip 'systemd-analyze is not installed', 2 unless -x '/usr/bin/systemd-analyze';
    my $prefix = "$dir/prefix";
    ($rc, $out) = sh("make -s install PREFIX=$prefix "
                     . "NGX_MODULES_DIR=$prefix/nginx-modules");
    is($rc, 0, 'make install PREFIX=... (real paths for verify)') or diag $out;
    my $u = "$prefix/lib/systemd/system";
    ($rc, $out) = sh("cd $u && systemd-analyze verify mt5credit-worker.service "
                     . "mt5credit-payout.service mt5credit-outbound.service "
                     . "mt5credit-poll-provider.service "
                     . "mt5credit-reconcile\@stripe.service "
                     . "mt5credit-reconcile\@stripe.timer "
                     . "mt5credit-backfill\@stripe.service "
                     . "mt5credit-backfill\@stripe.timer "
                     . "mt5credit-audit-seal.service mt5credit-audit-seal.timer "
                     . "mt5credit-status-textfile.service "
                     . "mt5credit-status-textfile.timer "
                     . "mt5credit-unit-failed\@mt5credit-reconcile\@stripe.service.service");
    ok($rc == 0 && $out eq '', 'systemd-analyze verify: every unit clean, no '
       . 'warning') or diag $out;
}

# --- the installed migrations build the schema ---------------------------------

{
    $sb->start_postgres;
    $sb->psql('CREATE DATABASE installed');
    my @args = ('-h', '127.0.0.1', '-p', $sb->pg_port, '-U', 'mt5', '-d',
                'installed');
    ($rc, $out) = sh("$stage/usr/local/share/mt5credit/sql/migrate @args");
    is($rc, 0, 'the installed sql/migrate builds an empty database')
        or diag $out;
    like($out, qr/schema up to date/, '... up to date');
    my $q = "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON "
          . "n.oid = p.pronamespace WHERE n.nspname = 'mt5credit'";
    my $installed = `psql -X -At @args -c "$q"`;
    chomp $installed;
    is($installed, $sb->sql1($q),
       "... with every function of the tree's schema ($installed)");
}

done_testing;
