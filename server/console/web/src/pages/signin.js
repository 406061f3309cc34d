import { h, replace, field } from '../dom.js';
import { raw, errText } from '../api.js';

// signinPage: email and password, checked by the API's login.
export async function signinPage(main, _params, ctx) {
  const q = new URLSearchParams(location.search);
  const next = safeNext(q.get('next'));
  if (ctx.session) { ctx.navigate(next, true); return; }
  const email = h('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const msg = h('p', { class: 'form-error', role: 'alert', 'aria-live': 'assertive' });
  if (q.get('link') === 'expired') msg.textContent = 'That sign-in link was used already or has expired. Run `boxkite ui` for a new one.';
  if (q.get('link') === 'elsewhere') {
    msg.textContent = 'That sign-in link was opened from another site, so it was not used: paste it into the address bar instead, or run `boxkite ui`.';
  }
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', { class: 'signin', onsubmit: async (e) => {
    e.preventDefault();
    submit.disabled = true;
    msg.textContent = '';
    try {
      ctx.setSession(await raw('POST', '/ui/session', { email: email.value, password: password.value }, { onSignedOut: false }));
      ctx.navigate(next, true);
    } catch (err) {
      msg.textContent = errText(err);
      submit.disabled = false;
      password.focus();
    }
  } },
  field('Email', email), field('Password', password), submit, msg);
  replace(main, h('section', { class: 'narrow', 'data-page': 'signin' },
    h('h1', {}, 'Sign in to boxkite'), form,
    h('p', { class: 'hint' }, 'On your own machine, `boxkite ui` opens the console signed in. ',
      'No account yet? `boxkite signup`.')));
  email.focus();
}

// safeNext keeps a redirect inside the console.
function safeNext(n) {
  return n && /^\/ui\/[\w\-/]*$/.test(n) && !n.startsWith('/ui/signin') ? n : '/ui/';
}
