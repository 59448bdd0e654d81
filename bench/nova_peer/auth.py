"""A paste filter in place of keystonemiddleware's authtoken: every request is the admin
of project ``bench``, with the headers authtoken sets. Runs in Nova's venv."""


def filter_factory(global_conf, **local_conf):
    def wrap(app):
        def call(environ, start_response):
            environ.update({
                "HTTP_X_IDENTITY_STATUS": "Confirmed",
                "HTTP_X_USER_ID": "bench", "HTTP_X_USER_NAME": "bench",
                "HTTP_X_PROJECT_ID": "bench", "HTTP_X_PROJECT_NAME": "bench",
                "HTTP_X_USER_DOMAIN_ID": "default", "HTTP_X_PROJECT_DOMAIN_ID": "default",
                "HTTP_X_ROLES": "admin,member,reader",
            })
            return app(environ, start_response)
        return call
    return wrap
