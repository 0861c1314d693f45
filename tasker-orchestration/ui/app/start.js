// The start of the app (served last: every view is defined by now).

byId('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  setToken(byId('token-input').value.trim());
  byId('token-input').value = '';
  byId('token-form').hidden = true;
  route();
});
byId('forget-token').addEventListener('click', () => {
  setToken('');
  flash = 'API token forgotten.';
  route();
});
window.addEventListener('hashchange', route);
setInterval(tickRelative, 5000);
route();
