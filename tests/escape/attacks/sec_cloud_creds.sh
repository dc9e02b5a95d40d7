# Tries: the usual credential paths of the caller ($HOME from the environment
# and from targets.env): ~/.ssh/id_rsa, ~/.aws/credentials, gcloud, .netrc,
# docker, kube, git-credentials, shell history. Stops it: $HOME is not in the
# sandbox's view; HOME inside is a sandbox path.
. ./escape_lib.sh
start sec_cloud_creds
for h in "$HOME" "$FAKE_HOME"; do
  for f in .ssh/id_rsa .aws/credentials .config/gcloud/application_default_credentials.json .netrc .docker/config.json .kube/config .git-credentials .bash_history canary.txt; do
    try_read "$h/$f" "$h/$f"
  done
done
