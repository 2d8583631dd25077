#!/usr/bin/perl
#
# Where the console's person comes from (issue 29, item 3): only from a
# name nginx verified, and nginx -t says so for every other setup.
# Impossible:
#   - a console without mt5_credit_console_person, or without the origins
#     its pages are served at, starting (nginx -t names the file and line)
#   - $remote_user as the person where nothing verifies it: no auth_basic,
#     auth_basic off, a variable realm, "satisfy any" (the docs' SSO setup
#     without its one line: Cookie sso=mallory and Authorization: Basic
#     ann:anything was ann)
#   - a request header, a cookie, any variable auth_request_set does not
#     set, a literal or two variables as the person
#   - $mt5_credit_client_cn without "ssl_verify_client on"
#   - under SSO, an Authorization header choosing the person
#   - a client certificate nginx did not verify, or whose subject holds two
#     CNs, naming a person; a verified one's CN is the name

use strict;
use warnings;

use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $json = JSON::PP->new;

# --- nginx -t ------------------------------------------------------------

my $sb0 = Mt5Credit::Sandbox->new;
my $dir = $sb0->dir;
$sb0->write_file('htpasswd', "ann:x\n");

# a CA, a server certificate, client certificates: one CN, two CNs
sub openssl { system("openssl @_ >/dev/null 2>&1") == 0 or die "openssl @_" }
openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=desk-ca "
        . "-keyout $dir/ca.key -out $dir/ca.pem");
sub issue {
    my ($name, $subj, $ext) = @_;
    openssl("req -newkey rsa:2048 -nodes -subj '$subj' -keyout "
            . "$dir/$name.key -out $dir/$name.csr");
    openssl("x509 -req -in $dir/$name.csr -CA $dir/ca.pem -CAkey "
            . "$dir/ca.key -CAcreateserial -days 2 -out $dir/$name.pem"
            . ($ext ? " -extfile $dir/$ext" : ''));
}
$sb0->write_file('server.ext', "subjectAltName=IP:127.0.0.1\n");
issue('server', '/CN=127.0.0.1', 'server.ext');
issue('ann', '/CN=ann');
issue('twice', '/CN=ann/CN=ben');
openssl("req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ann "
        . "-keyout $dir/self.key -out $dir/self.pem");

sub conf {
    my ($location, %o) = @_;
    my $server = $o{server} || '';
    my $origin = exists $o{origin} ? $o{origin}
               : 'mt5_credit_console_origin https://desk.example.com;';
    return $sb0->nginx_conf(<<"HTTP");
    mt5_credit_console_postgres "host=127.0.0.1 dbname=mt5credit user=web";
    server {
        listen 127.0.0.1:%%PORT%%;
        $server
        location /console/ {
            mt5_credit_console;
            $origin
            $location
        }
        location = /_sso { internal; proxy_pass http://127.0.0.1:9/; }
    }
HTTP
}

my $basic = 'auth_basic "desk"; auth_basic_user_file %%DIR%%/htpasswd;';
my $sso = 'auth_request /_sso; '
        . 'auth_request_set $sso_user $upstream_http_x_auth_request_user;';
my $tls = "listen 127.0.0.1:9443 ssl; ssl_certificate $dir/server.pem; "
        . "ssl_certificate_key $dir/server.key; "
        . "ssl_client_certificate $dir/ca.pem;";
my @refused = (
    [ conf($basic), qr/"mt5_credit_console" in \S+:\d+ needs "mt5_credit_console_person"/,
      'no mt5_credit_console_person' ],
    [ conf("$basic mt5_credit_console_person \$remote_user;", origin => ''),
      qr/"mt5_credit_console" in \S+:\d+ needs "mt5_credit_console_origin"/,
      'no mt5_credit_console_origin' ],
    [ conf("$sso mt5_credit_console_person \$remote_user;"),
      qr/\$remote_user" in \S+:\d+: nginx parses \$remote_user from the request's own Authorization header, and no auth_basic verifies it/,
      '$remote_user under SSO (the docs\' setup without its line)' ],
    [ conf("auth_basic off; auth_basic_user_file %%DIR%%/htpasswd; "
           . 'mt5_credit_console_person $remote_user;'),
      qr/and auth_basic is off in this location/, '$remote_user, auth_basic off' ],
    [ conf('auth_basic $arg_realm; auth_basic_user_file %%DIR%%/htpasswd; '
           . 'mt5_credit_console_person $remote_user;'),
      qr/auth_basic's realm is a variable/, '$remote_user, a variable realm' ],
    [ conf("$basic satisfy any; allow 127.0.0.1; "
           . 'mt5_credit_console_person $remote_user;'),
      qr/under "satisfy any" a request another rule lets in names its own user/,
      '$remote_user under satisfy any' ],
    [ conf("$sso mt5_credit_console_person \$http_x_user;"),
      qr/"mt5_credit_console_person \$http_x_user" in \S+:\d+ is no verified name: it is not set by auth_request_set/,
      'a request header' ],
    [ conf("$sso mt5_credit_console_person \$cookie_sso;"),
      qr/\$cookie_sso" in \S+:\d+ is no verified name/, 'a cookie' ],
    [ conf("$sso satisfy any; allow 127.0.0.1; "
           . 'mt5_credit_console_person $sso_user;'),
      qr/under "satisfy any" a request another rule lets in is never asked of the SSO/,
      'an SSO variable under satisfy any' ],
    [ conf('auth_request off; auth_request_set $sso_user $upstream_http_x; '
           . 'mt5_credit_console_person $sso_user;'),
      qr/\$sso_user" in \S+:\d+ is no verified name/, 'auth_request off' ],
    [ conf('mt5_credit_console_person $mt5_credit_client_cn;', server => $tls),
      qr/"mt5_credit_console_person \$mt5_credit_client_cn" in \S+:\d+ needs "ssl_verify_client on"/,
      'a certificate\'s CN, certificates not verified' ],
    [ conf('mt5_credit_console_person $mt5_credit_client_cn;',
           server => "$tls ssl_verify_client optional;"),
      qr/needs "ssl_verify_client on"/, '... verified only optionally' ],
    [ conf("$basic mt5_credit_console_person ann;"),
      qr/mt5_credit_console_person "ann" is not one variable/, 'a literal name' ],
    [ conf("$basic mt5_credit_console_person \$remote_user\$arg_x;"),
      qr/is not one variable/, 'two variables' ],
    [ conf("$basic mt5_credit_console_person \$remote_user;",
           origin => 'mt5_credit_console_origin https://Desk.example.com/;'),
      qr/mt5_credit_console_origin "https:\/\/Desk\.example\.com\/" is not an origin/,
      'an origin with a path and capitals' ],
);
for my $c (@refused) {
    my ($ok, $out) = $sb0->nginx_test_config($c->[0]);
    ok(!$ok, "nginx -t refuses: $c->[2]");
    like($out, $c->[1], '... saying why and where') or diag $out;
}

for my $c ([ conf("$basic mt5_credit_console_person \$remote_user;"),
             'auth_basic and $remote_user' ],
           [ conf("$basic mt5_credit_console_person \${remote_user};"),
             '... spelled ${remote_user}' ],
           [ conf("$sso mt5_credit_console_person \$sso_user;"),
             'auth_request and the variable auth_request_set sets' ],
           [ conf('mt5_credit_console_person $mt5_credit_client_cn;',
                  server => "$tls ssl_verify_client on;"),
             'verified certificates and their CN' ]) {
    my ($ok, $out) = $sb0->nginx_test_config($c->[0]);
    ok($ok, "nginx -t takes $c->[1]") or diag $out;
}

# --- SSO: the SSO's answer is the person, never the request's header ------

my $cport = Mt5Credit::Sandbox::free_port();
my $st = Mt5Credit::Stack->new(
    nginx_http => 'mt5_credit_console_postgres "host=127.0.0.1 '
                . 'port=%%PGPORT%% dbname=mt5credit user=web";',
    locations => "
        location /console/ {
            auth_request /_sso;
            auth_request_set \$sso_user \$upstream_http_x_auth_request_user;
            mt5_credit_console;
            mt5_credit_console_person \$sso_user;
            mt5_credit_console_origin http://localhost;
            alias $ROOT/ngx_mt5_credit_module/console/;
        }
        location = /_sso {
            internal;
            proxy_pass http://127.0.0.1:%%PORT%%/_sso_backend;
            proxy_pass_request_body off;
            proxy_set_header Content-Length \"\";
        }
        # the SSO's double: whoever the session cookie says
        location = /_sso_backend {
            if (\$cookie_sso = \"\") { return 401; }
            add_header X-Auth-Request-User \$cookie_sso always;
            return 200 \"\";
        }
    }
    server {
        listen 127.0.0.1:$cport ssl;
        ssl_certificate $dir/server.pem;
        ssl_certificate_key $dir/server.key;
        ssl_client_certificate $dir/ca.pem;
        ssl_verify_client on;
        location /console/ {
            mt5_credit_console;
            mt5_credit_console_person \$mt5_credit_client_cn;
            mt5_credit_console_origin https://127.0.0.1:$cport;
            alias $ROOT/ngx_mt5_credit_module/console/;
        }");
my $sb = $st->sb;
$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann TO web;
SELECT mt5credit.person_identity_map('ann', 'ann');
SQL

sub whoami {
    my (@h) = @_;
    return $sb->http('GET', '/console/api/whoami', headers => \@h);
}

my $r = whoami([ 'Cookie', 'sso=ann' ]);
is($r->{status}, 200, 'SSO: ann\'s session reads as ann');
is($json->decode($r->{body})->{person}, 'ann', '... the person the SSO named');
$r = whoami([ 'Cookie', 'sso=mallory' ],
            [ 'Authorization', 'Basic ' . encode_base64('ann:anything', '') ]);
is($r->{status}, 403, 'mallory\'s session with "Authorization: Basic ann": '
   . '403, mallory is nobody; never ann');
is(whoami([ 'Authorization', 'Basic ' . encode_base64('ann:x', '') ])
   ->{status}, 401, 'no session, a Basic header: the SSO says 401');

# --- certificates: the verified CN is the name ----------------------------

sub curl {
    my ($cert) = @_;
    my $c = $cert ? "--cert $dir/$cert.pem --key $dir/$cert.key" : '';
    my $out = `curl -s -o - -w '\\n%{http_code}' --cacert $dir/ca.pem $c https://127.0.0.1:$cport/console/api/whoami 2>/dev/null`;
    my ($body, $code) = $out =~ /^(.*)\n(\d+)$/s;
    return ($code // 0, $body // '');
}
my ($code, $body) = curl('ann');
is($code, 200, 'a certificate the desk\'s CA issued to CN=ann: 200');
is(eval { $json->decode($body)->{person} }, 'ann', '... as ann');
($code) = curl('twice');
is($code, 403, 'a certificate whose subject holds two CNs (ann, ben): 403');
($code) = curl('self');
is($code, 400, 'a self-signed CN=ann: nginx refuses it (400)');
($code) = curl(undef);
is($code, 400, 'no certificate: 400');

is_deeply([ $sb->log_problems ], [], 'no alert, crit or crash in the log');

done_testing;
