#include "server/table_mailbox.h"

#include <fcntl.h>
#include <unistd.h>

namespace rrs {

Result<std::unique_ptr<TableMailbox>> TableMailbox::create(event_base* base, Deliver deliver) {
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return Status::from_errno("pipe for new tables");
  std::unique_ptr<TableMailbox> box(new TableMailbox(std::move(deliver)));
  box->read_end_ = UniqueFd(fds[0]);
  box->write_end_ = UniqueFd(fds[1]);
  box->event_ = event_new(base, fds[0], EV_READ | EV_PERSIST, on_wake, box.get());
  if (!box->event_ || event_add(box->event_, nullptr) != 0)
    return Status::error("new-table event", "libevent refused it");
  return box;
}

TableMailbox::~TableMailbox() {
  if (event_) event_free(event_);
}

void TableMailbox::post(TablePtr table) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(table);
  }
  char one = 1;
  (void)!::write(write_end_.get(), &one, 1);  // a full pipe already means "wake up"
}

void TableMailbox::on_wake(evutil_socket_t fd, short, void* self) {
  auto* box = static_cast<TableMailbox*>(self);
  char drain[64];
  while (::read(fd, drain, sizeof drain) > 0) {
  }
  TablePtr table;
  {
    std::lock_guard lock(box->mu_);
    table = std::move(box->pending_);
  }
  if (table) box->deliver_(std::move(table));
}

}  // namespace rrs
