# The edge: an HTTP cache in front of nginx, as a CDN stands in front of the cluster
# (docs/api.md §10, docs/operations.md "The edge"). cluster/edge.py fills in the @...@
# values and starts varnishd with http_gzip_support off, so that Accept-Encoding reaches the
# service and every coding is a variant of its own (Vary).
vcl 4.1;

import std;
import xkey;

backend nginx {
    .host = "127.0.0.1";
    .port = "@NGINX_PORT@";
    # /ready through nginx fails (502) once no instance answers: the edge then serves what
    # it holds for as long as stale-if-error allows.
    .probe = {
        .url = "/ready";
        .interval = 0.5s;
        .timeout = 1s;
        .window = 3;
        .threshold = 2;
        .initial = 2;
    }
}

acl purgers {
    "127.0.0.1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "PURGE needs an xkey-purge header"));
        }
        # Hard purge: the objects are gone now, so the next request fetches the new bundle.
        set req.http.n-gone = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.n-gone));
    }
    # One cache entry per coding the service sends (docs/delivery.md, "Both"): the coding a
    # browser would get. A header naming none of them goes to the service as it is, uncached
    # (it may refuse identity: a 406 is the service's to give).
    if (req.http.Accept-Encoding) {
        if (req.http.Accept-Encoding ~ "(?i)(^|,)\s*zstd\s*(;\s*q\s*=\s*(1(\.0*)?|0?\.[0-9]*[1-9][0-9]*))?\s*(,|$)") {
            set req.http.Accept-Encoding = "zstd";
        } elsif (req.http.Accept-Encoding ~ "(?i)(^|,)\s*br\s*(;\s*q\s*=\s*(1(\.0*)?|0?\.[0-9]*[1-9][0-9]*))?\s*(,|$)") {
            set req.http.Accept-Encoding = "br";
        } elsif (req.http.Accept-Encoding ~ "(?i)(^|,)\s*(x-)?gzip\s*(;\s*q\s*=\s*(1(\.0*)?|0?\.[0-9]*[1-9][0-9]*))?\s*(,|$)") {
            set req.http.Accept-Encoding = "gzip";
        } elsif (req.http.Accept-Encoding ~ "^\s*(identity\s*)?$") {
            unset req.http.Accept-Encoding;
        } else {
            return (pass);
        }
    }
    # While the service answers, a stale object is served (and refreshed behind it) only
    # within stale-while-revalidate; when it does not, within the object's whole grace,
    # which vcl_backend_response sets to stale-if-error.
    if (std.healthy(req.backend_hint)) {
        set req.grace = @STALE_WHILE_REVALIDATE@s;
    }
    # Everything else: the built-in rules (only GET and HEAD are cached; requests with
    # Authorization or Cookie pass).
}

sub vcl_backend_response {
    # A refresh that fails keeps the stale object instead of replacing it with an error.
    if (beresp.status >= 500 && bereq.is_bgfetch) {
        return (abandon);
    }
    if (beresp.http.Cache-Control ~ "stale-if-error=[0-9]+") {
        set beresp.grace = std.duration(
            regsub(beresp.http.Cache-Control, "^.*stale-if-error=([0-9]+).*$", "\1s"), 0s);
    }
    # Keep objects with an ETag a while longer, to revalidate with If-None-Match.
    if (beresp.http.ETag) {
        set beresp.keep = 1h;
    }
    # The keys the service names (app/surrogate_keys.py) are what xkey indexes.
    if (beresp.http.Surrogate-Key) {
        set beresp.http.xkey = beresp.http.Surrogate-Key;
    }
}

sub vcl_deliver {
    unset resp.http.xkey;
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
}

sub vcl_synth {
    if (req.method == "PURGE") {
        set resp.http.Content-Type = "text/plain";
        set resp.body = resp.reason + {"
"};
        return (deliver);
    }
}
